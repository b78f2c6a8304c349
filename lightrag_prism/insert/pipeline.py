"""Insert-time integration: the chunker PrismRAG installs and its extraction hook.

* :func:`make_prism_chunker` wraps the chunking function (LightRAG's default, the table-aware chunker, or the
  user's own). Text without an HTML table goes to LightRAG's ``chunking_by_token_size`` unchanged, so chunks are
  identical to stock LightRAG's. Page markers are taken out first and every chunk gets its citation (pages,
  section path, span) in its ``heading`` record (``citations/``). A document inserted with a timestamp gets a
  ``[Time: ts]`` header line on every chunk (so the timestamp shows in query context) and a ``prism_timestamp``
  chunk field.
* :class:`InsertHooks.extract` (called instead of ``LightRAG._process_extract_entities`` through the instance's
  seam, ``seam.py``) strips that header before extraction. Without an LLM the chunks go to the offline
  extractor (:mod:`.extraction.offline_hook`); with one, it extracts table chunks with
  :data:`TABLE_EXTRACTION_GUIDANCE` appended to the entity-type guidance of *their* prompt only (a copy of the
  global config per table chunk; other chunks use LightRAG's own call), and prefixes every extracted entity and
  relation description with ``[Time: ts]`` (idempotent).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from lightrag.chunker.token_size import chunking_by_token_size
from lightrag.operate import extract_entities
from lightrag.utils import compute_mdhash_id, sanitize_text_for_encoding

from .. import patches
from ..citations.layout import Layout
from ..citations.store import cite_chunks
from ..inputs import html_to_text
from ..plugin_state import plugin_state
from .tables.html import find_table_spans
from .extraction.offline_hook import extract_offline
from .tables.chunker import make_table_aware_chunker, table_prompt_addon
from .timestamps import store as timestamp_store
from .timestamps.markers import prefix_description

logger = logging.getLogger(__name__)

TIME_HEADER = "[Time: {ts}]\n"
TIMESTAMP_FIELD = "prism_timestamp"
# A whole HTML page (LightRAG Server reads uploaded .html files as raw markup): chunked as its text, tables kept.
HTML_PAGE = re.compile(r"\s*(<!doctype html|<html[\s>])", re.IGNORECASE)
_HEADER_MARGIN = 16  # tokens kept free under the embedder limit for the timestamp header


def content_key(content: str) -> str:
    """Key of a document's content as the chunker sees it (LightRAG sanitises content before storing it)."""
    return compute_mdhash_id(sanitize_text_for_encoding(content).strip(), prefix="content-")


def time_header(timestamp: str) -> str:
    return TIME_HEADER.format(ts=timestamp)


def strip_time_header(content: str, timestamp: str | None) -> str:
    header = time_header(timestamp) if timestamp else None
    return content[len(header):] if header and content.startswith(header) else content


def _stamp(chunks: list[dict[str, Any]], timestamp: str, tokenizer) -> list[dict[str, Any]]:
    header = time_header(timestamp)
    for chunk in chunks:
        if not chunk["content"].startswith(header):
            chunk["content"] = header + chunk["content"]
            chunk["tokens"] = len(tokenizer.encode(chunk["content"]))
        chunk[TIMESTAMP_FIELD] = timestamp
    return chunks


def make_prism_chunker(inner: Callable | None, timestamps: dict[str, str], *, table_aware: bool,
                       embed_max_tokens: int | None,
                       find_stored: Callable[[str], Awaitable[str | None] | None] | None = None) -> Callable:
    """The ``chunking_func`` PrismRAG installs; ``inner`` is the user's chunker (``None`` = LightRAG's default).

    ``timestamps`` maps :func:`content_key` → timestamp; it is filled by ``ainsert`` before enqueueing. A document
    it lacks may carry a timestamp another process stored: ``find_stored(key)`` returns an awaitable lookup for
    it, or None when none can exist. With table awareness, a whole HTML page is chunked as its text with its
    tables kept (``inputs.html_to_text``).
    """
    table_cap = None
    if embed_max_tokens:
        table_cap = max(embed_max_tokens - _HEADER_MARGIN, embed_max_tokens // 2)
    table_chunker = make_table_aware_chunker(embed_max_tokens=table_cap) if table_aware and inner is None else None

    def chunk(tokenizer, content, timestamp, options):
        if table_chunker is not None and HTML_PAGE.match(content):
            content = html_to_text(content)
        layout = Layout.parse(content)  # page markers out: the chunks are those of the text without them
        if table_chunker is not None and find_table_spans(layout.text):
            result = table_chunker(tokenizer, layout.text, *options)
        elif inner is None:
            result = chunking_by_token_size(tokenizer, layout.text, *options, _emit_source_span=True)
        else:
            result = inner(tokenizer, layout.text, *options)

        def finish(chunks):
            chunks = cite_chunks(list(chunks), layout)
            return chunks if timestamp is None else _stamp(chunks, timestamp, tokenizer)
        if inspect.isawaitable(result):
            async def finished():
                return finish(await result)
            return finished()
        return finish(result)

    def prism_chunking(tokenizer, content, split_by_character=None, split_by_character_only=False,
                       chunk_overlap_token_size=100, chunk_token_size=1200):
        options = (split_by_character, split_by_character_only, chunk_overlap_token_size, chunk_token_size)
        key = content_key(content)
        timestamp = timestamps.get(key)
        stored = find_stored(key) if timestamp is None and find_stored is not None else None
        if stored is None:
            return chunk(tokenizer, content, timestamp, options)

        async def with_stored_timestamp():
            result = chunk(tokenizer, content, await stored, options)
            return list(await result) if inspect.isawaitable(result) else result
        return with_stored_timestamp()

    prism_chunking.prism_inner = inner  # introspection: the user's own chunker, if any
    prism_chunking.table_aware = table_chunker is not None
    return prism_chunking


def _prefix_records(results: list, chunk_timestamps: dict[str, str]) -> None:
    """Prefix ``[Time: ts]`` to each extracted description whose source chunk has a timestamp (in place)."""
    for nodes, edges in results:
        for records in list(nodes.values()) + list(edges.values()):
            for record in records:
                ts = chunk_timestamps.get(record.get("source_id", ""))
                if ts and record.get("description"):
                    record["description"] = prefix_description(record["description"], ts)


@dataclass
class InsertHooks:
    """Per-instance insert state; ``rag.prism_seam.insert_hooks``."""

    rag: Any
    timestamps: dict[str, str] = field(default_factory=dict)  # content_key -> timestamp
    timestamps_stored: bool = False  # the storages hold document timestamps (then the chunker looks up misses)

    def find_stored(self, key: str) -> Awaitable[str | None] | None:
        """The chunker's lookup of a timestamp another process stored (``timestamps/store.py``)."""
        if not self.timestamps_stored:
            return None
        return self._stored_timestamp(key)

    async def _stored_timestamp(self, key: str) -> str | None:
        found = await timestamp_store.lookup(plugin_state(self.rag), key)
        if found is not None:
            self.timestamps[key] = found
        return found

    def _table_config(self, content: str) -> dict[str, Any] | None:
        addon = table_prompt_addon(content)
        if not addon:
            return None
        return patches.insert_hooks.config_with_extra_guidance(self.rag, addon)

    async def extract(self, original, chunks: dict[str, dict], pipeline_status, pipeline_status_lock,
                      truncation_tally) -> list:
        chunk_timestamps = {cid: c[TIMESTAMP_FIELD] for cid, c in chunks.items() if c.get(TIMESTAMP_FIELD)}
        plain = {cid: dict(c, content=strip_time_header(c["content"], c.get(TIMESTAMP_FIELD)))
                 for cid, c in chunks.items()}
        if hasattr(self.rag.llm_model_func, "extractor"):  # no LLM: the offline extractor, no LLM calls
            results = await extract_offline(self.rag, plain)
            _prefix_records(results, chunk_timestamps)
            return results
        table_configs = {}
        if getattr(self.rag, "table_aware_chunking", False):
            table_configs = {cid: cfg for cid, c in plain.items()
                             if (cfg := self._table_config(c["content"])) is not None}
        text_chunks = {cid: c for cid, c in plain.items() if cid not in table_configs}
        tasks = [original(text_chunks, pipeline_status, pipeline_status_lock, truncation_tally=truncation_tally)
                 ] if text_chunks else []
        tasks += [extract_entities({cid: plain[cid]}, global_config=cfg, pipeline_status=pipeline_status,
                                   pipeline_status_lock=pipeline_status_lock,
                                   llm_response_cache=self.rag.llm_response_cache,
                                   text_chunks_storage=self.rag.text_chunks, truncation_tally=truncation_tally)
                  for cid, cfg in table_configs.items()]
        if table_configs:
            logger.info("table-aware extraction for %d table chunk(s)", len(table_configs))
        results = [item for part in await asyncio.gather(*tasks) for item in part]
        _prefix_records(results, chunk_timestamps)
        return results
