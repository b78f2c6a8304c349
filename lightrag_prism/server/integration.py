"""LightRAG Server (``lightrag.api``, the ``api`` extra) running a PrismRAG: the module globals it is built from.

LightRAG's server has no extension point: ``create_app`` builds ``LightRAG(...)`` by name, the query routes
validate ``mode`` against a ``Literal`` of the six stock modes, the Ollama-compatible chat maps ``/local``-style
prefixes in ``parse_query_mode``, and uploads are chunked by the fixed-token strategy, which bypasses
``chunking_func``. Each of those is a module global looked up when ``create_app`` (or a request) runs, so
:func:`install` replaces them before ``create_app`` is called:

* ``lightrag_server.LightRAG``: a factory that returns a ``PrismRAG`` with the same arguments (plus the plugin's
  offline LLM stand-in and local embedder unless LightRAG Server's own bindings were chosen explicitly);
* ``query_routes.QueryRequest``: every registered mode and every ``PrismQueryParam`` knob; an unknown mode or a bad
  knob is a validation error (HTTP 422, 400 on ``/query/data``) that lists the valid modes;
* ``ollama_api.parse_query_mode``: ``/prism``, ``/hipporag``, ``/fidelis``, ``/ensemble``, ``/tournament`` (and
  their ``...context`` forms) besides the stock prefixes; its token estimate uses the offline tokenizer;
* the WebUI's compiled JavaScript (``webui.py``): its query box accepts ``/prism `` and the other plugin prefixes,
  and its mode selector lists the plugin's modes;
* ``document_routes``: the default chunking of uploads, scans and texts is ``C`` (``chunking_func``, i.e. the
  plugin's table-aware chunker); a strategy the client names explicitly is kept. ``/documents/text(s)`` accept an
  optional ``timestamp`` / ``timestamps`` for timestamp-aware summaries;
* ``query_routes.QueryResponse``: its references keep the pages and sections of citations;
* ``parser.legacy.extractors``: an uploaded PDF is read page by page with its outline (``inputs.read_pdf``), so
  its chunks cite pages.

Importing ``lightrag.api`` parses the server's command line (``lightrag.api.config``): call
``lightrag.api.config.initialize_config`` first.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from enum import Enum
from typing import Any, Callable, Optional

from . import webui
from ..patches.private import _fail, check_lightrag, check_symbol, wrap_once

# Module globals replaced here (name, kind). Checked by check_server_symbols before anything is replaced.
SERVER_GLOBALS = [
    ("lightrag.api.lightrag_server", "LightRAG"),
    ("lightrag.api.lightrag_server", "create_app"),
    ("lightrag.api.routers.query_routes", "QueryRequest"),
    ("lightrag.api.routers.query_routes", "create_query_routes"),
    ("lightrag.api.routers.query_routes", "QueryResponse"),
    ("lightrag.api.routers.query_routes", "ReferenceItem"),
    ("lightrag.api.routers.ollama_api", "parse_query_mode"),
    ("lightrag.api.routers.ollama_api", "_ESTIMATE_TOKENIZER"),
    ("lightrag.api.routers.document_routes", "PROCESS_OPTION_CHUNK_FIXED"),
    ("lightrag.api.routers.document_routes", "InsertTextRequest"),
    ("lightrag.api.routers.document_routes", "InsertTextsRequest"),
    ("lightrag.api.routers.document_routes", "pipeline_index_texts"),
    ("lightrag.api.lightrag_server", "create_embedding_function_from_args"),
    ("lightrag.parser.legacy.extractors", "_extract_pdf_pypdf"),
    ("lightrag.parser.legacy.extractors", "_BINARY_EXTRACTORS"),
]
OLLAMA_PARSE_PARAMS = 1
PIPELINE_INDEX_TEXTS_PARAMS = 7


def check_server_symbols() -> None:
    import importlib

    check_lightrag()
    for module_name, name in SERVER_GLOBALS:
        if not hasattr(importlib.import_module(module_name), name):
            _fail(f"but {module_name}.{name} is missing (the server integration needs it)")
    check_symbol("lightrag.api.routers.ollama_api", "parse_query_mode", OLLAMA_PARSE_PARAMS)
    check_symbol("lightrag.api.routers.document_routes", "pipeline_index_texts", PIPELINE_INDEX_TEXTS_PARAMS)


# --- /query, /query/stream, /query/data ----------------------------------------------------------------------
def _knob_fields() -> dict[str, Any]:
    """Every PrismQueryParam field LightRAG's QueryParam lacks, as an optional request field (None = default)."""
    from lightrag import QueryParam
    from pydantic import Field

    from ..param import PrismQueryParam

    stock = {f.name for f in fields(QueryParam)}
    hints = typing.get_type_hints(PrismQueryParam)
    return {f.name: (Optional[hints[f.name]], Field(default=None, description=f"PrismQueryParam.{f.name}"))
            for f in fields(PrismQueryParam) if f.name not in stock}


def prism_query_request(base):
    """``QueryRequest`` with ``mode`` any valid mode and the plugin's knobs; ``to_query_params`` builds a
    ``PrismQueryParam`` (its own checks run at validation time, so a bad knob is a 4xx, not a 500)."""
    from pydantic import Field, create_model, field_validator, model_validator

    from ..param import PrismQueryParam
    from ..retrievers import check_mode, valid_modes

    mode_prefix = prism_parse_query_mode(lambda query: (query, None, False, None), plugin_search_modes())

    class PrismQueryRequest(base):
        mode: str = Field(default="mix", description=f"Query mode, one of: {', '.join(valid_modes())}")

        @model_validator(mode="before")
        @classmethod
        def mode_typed_in_the_query(cls, data):
            """``/prism question`` (as typed in LightRAG's WebUI, whose mode selector only has the stock modes):
            the plugin mode named by the prefix; ``/prismcontext question``: context only; as in the Ollama chat."""
            if isinstance(data, dict) and isinstance(data.get("query"), str):
                query, mode, only_context, user_prompt = mode_prefix(data["query"])
                if mode is not None:
                    data = {**data, "query": query, "mode": mode.value}
                    if only_context:
                        data["only_need_context"] = True
                    if user_prompt:
                        data["user_prompt"] = user_prompt
            return data

        @field_validator("mode", mode="after")
        @classmethod
        def known_mode(cls, mode: str) -> str:
            check_mode(mode)
            return mode

        @model_validator(mode="after")
        def valid_knobs(self):
            self.to_query_params(False)
            return self

        def to_query_params(self, is_stream: bool) -> PrismQueryParam:
            data = self.model_dump(exclude_none=True, exclude={"query", "include_chunk_content", "include_progress"})
            param = PrismQueryParam(**{k: v for k, v in data.items() if k in PRISM_PARAM_FIELDS})
            param.stream = is_stream
            return param

    PRISM_PARAM_FIELDS = {f.name for f in fields(PrismQueryParam)}
    return create_model("QueryRequest", __base__=PrismQueryRequest, **_knob_fields())


# --- Ollama-compatible chat ------------------------------------------------------------------------------------
def cited_query_response(base, reference_item):
    """``QueryResponse`` whose references keep the pages and sections the plugin adds (LightRAG's
    ``ReferenceItem`` drops the fields it does not declare)."""
    from typing import List

    from pydantic import Field, create_model

    cited = create_model(
        "CitedReferenceItem", __base__=reference_item,
        pages=(Optional[List[int]], Field(default=None, description="Pages of the file its cited chunks cover")),
        sections=(Optional[List[str]], Field(default=None, description="Section paths (A > B) of its cited chunks")))
    return create_model("QueryResponse", __base__=base, references=(Optional[List[cited]], Field(
        default=None, description=base.model_fields["references"].description)))


def plugin_search_modes() -> type[Enum]:
    from ..retrievers import registered_modes

    return Enum("PrismSearchMode", {m: m for m in registered_modes()}, type=str)


def prism_parse_query_mode(original: Callable, modes: type[Enum]) -> Callable:
    """``/prism question`` → mode prism; ``/prismcontext question`` → context only; anything else: LightRAG's."""
    prefixes = [(f"/{m.value}context", m, True) for m in modes] + [(f"/{m.value} ", m, False) for m in modes]

    def parse_query_mode(query: str):
        for prefix, mode, only_context in prefixes:
            if query.startswith(prefix):
                return query[len(prefix):].lstrip(), mode, only_context, None
            bracketed = prefix.rstrip() + "["  # "/prism[user prompt] question"
            if query.startswith(bracketed) and "]" in query:
                user_prompt, _, rest = query[len(bracketed):].partition("]")
                return rest.lstrip(), mode, only_context, user_prompt
        return original(query)

    return parse_query_mode


# --- documents -------------------------------------------------------------------------------------------------
class PendingTimestamps:
    """Timestamps sent with ``/documents/text(s)``, keyed by content, until the text is enqueued."""

    def __init__(self) -> None:
        self.by_content: dict[str, str] = {}

    def add(self, text: str, timestamp: str | None) -> None:
        from ..insert.pipeline import content_key
        from ..insert.timestamps.markers import validate_timestamps

        if timestamp is not None:
            self.by_content[content_key(text)] = validate_timestamps([timestamp], 1)[0]

    async def claim(self, rag, texts: list[str]) -> None:
        from ..insert.api import save_doc_timestamps
        from ..insert.pipeline import content_key

        found = {key: self.by_content.pop(key) for key in map(content_key, texts) if key in self.by_content}
        if found:
            await save_doc_timestamps(rag, found)


PENDING_TIMESTAMPS = PendingTimestamps()


def timestamped_text_requests(single, many):
    from pydantic import Field, model_validator

    class InsertTextRequest(single):
        timestamp: Optional[str] = Field(default=None, description="e.g. 2024-03-01: prefixes the text's chunks "
                                                                   "with [Time: ...] (timestamp-aware summaries)")

        @model_validator(mode="after")
        def remember_timestamp(self):
            PENDING_TIMESTAMPS.add(self.text, self.timestamp)
            return self

    class InsertTextsRequest(many):
        timestamps: Optional[list[str]] = Field(default=None, description="one timestamp per text")

        @model_validator(mode="after")
        def remember_timestamps(self):
            if self.timestamps is not None:
                if len(self.timestamps) != len(self.texts):
                    raise ValueError(f"timestamps has {len(self.timestamps)} items for {len(self.texts)} texts")
                for text, ts in zip(self.texts, self.timestamps):
                    PENDING_TIMESTAMPS.add(text, ts)
            return self

    return InsertTextRequest, InsertTextsRequest


def claiming_timestamps(original):
    async def pipeline_index_texts(rag, texts, *args, **kwargs):
        if texts:
            await PENDING_TIMESTAMPS.claim(rag, list(texts))
        return await original(rag, texts, *args, **kwargs)

    return pipeline_index_texts


# --- install -------------------------------------------------------------------------------------------------
def install(make_rag: Callable[..., Any], add_routes: Callable[[Any, Any, Any], None],
            embedding_func: Any = None) -> None:
    """Point LightRAG Server at PrismRAG. ``make_rag(**kwargs)`` replaces ``LightRAG(**kwargs)`` in ``create_app``;
    ``add_routes(app, rag, args)`` adds the plugin's routes to the app ``create_app`` returns. With the plugin's own
    ``embedding_func``, LightRAG's binding factory is not run (its default binding, Ollama, pip-installs the
    ``ollama`` package when imported). Idempotent."""
    from lightrag.api import lightrag_server
    from lightrag.api.routers import document_routes, ollama_api, query_routes

    from ..backends.tokenizer import OfflineTokenizer

    check_server_symbols()
    if getattr(lightrag_server.create_app, "_lightrag_prism_wrapped", False):
        return
    built: list[Any] = []

    def build_rag(**kwargs):
        built.append(make_rag(**kwargs))
        return built[-1]

    def adding_routes(original_create_app):
        def create_app(args):
            app = original_create_app(args)
            add_routes(app, built[-1], args)
            webui.serve_with_modes(app, [m.value for m in plugin_search_modes()])
            return app

        return create_app

    wrap_once(lightrag_server, "create_app", adding_routes)  # marks it: a second install returns above
    if embedding_func is not None:
        lightrag_server.create_embedding_function_from_args = lambda args, config_cache=None: embedding_func
    lightrag_server.LightRAG = build_rag
    query_routes.QueryRequest = prism_query_request(query_routes.QueryRequest)
    query_routes.QueryResponse = cited_query_response(query_routes.QueryResponse, query_routes.ReferenceItem)
    modes = plugin_search_modes()
    wrap_once(ollama_api, "parse_query_mode", lambda original: prism_parse_query_mode(original, modes))
    # LightRAG's token estimate builds a tiktoken encoder that downloads its vocabulary on first use.
    ollama_api._ESTIMATE_TOKENIZER = OfflineTokenizer()
    document_routes.PROCESS_OPTION_CHUNK_FIXED = _custom_chunking_option()
    document_routes.InsertTextRequest, document_routes.InsertTextsRequest = timestamped_text_requests(
        document_routes.InsertTextRequest, document_routes.InsertTextsRequest)
    wrap_once(document_routes, "pipeline_index_texts", claiming_timestamps)
    _read_uploaded_pdfs_with_pages()


def _read_uploaded_pdfs_with_pages() -> None:
    """Uploaded PDFs are read as ``lightrag-prism index`` reads them (``inputs.read_pdf``: page markers, outline
    headings), so their chunks cite pages. LightRAG's extractor is found by the module global it compares against
    and by its table entry: both are replaced."""
    from io import BytesIO

    from lightrag.parser.legacy import extractors

    from ..inputs import read_pdf

    def extract_pdf_with_pages(file_bytes: bytes, password: str | None = None) -> str:
        import pypdf

        return read_pdf(pypdf.PdfReader(BytesIO(file_bytes)), "the uploaded PDF", password=password)

    extractors._extract_pdf_pypdf = extractors._BINARY_EXTRACTORS["pdf"] = extract_pdf_with_pages


def _custom_chunking_option() -> str:
    from lightrag.constants import PROCESS_OPTION_CHUNK_CUSTOM

    return PROCESS_OPTION_CHUNK_CUSTOM
