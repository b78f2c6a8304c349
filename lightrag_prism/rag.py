"""PrismRAG: LightRAG with lightrag_prism's modes, offline defaults and a cached graph snapshot.

A drop-in subclass: same constructor, storages and return types. Differences a user can see:

* ``tokenizer`` defaults to an offline cl100k tokenizer (LightRAG's default downloads its vocabulary);
* ``llm_model_func`` may be omitted: the offline stand-in then answers the steps that have a deterministic
  fallback (extraction with spaCy, bounded summaries, keywords) and answer generation raises
  :class:`LLMNotConfiguredError`;
* ``QueryParam(mode=...)`` also accepts the registered lightrag_prism modes; an unknown mode raises ``ValueError``
  naming the valid ones (stock LightRAG returns a failure dict and ``aquery`` returns ``None``);
* ``aquery_data``/``aquery`` keep every ``PrismQueryParam`` field (stock ``aquery_data`` rebuilds a base QueryParam);
* processes on the same storages see each other's graph changes (``shared_version_interval``, ``coordination.py``),
  and a storage server that cannot be reached fails a query with :class:`StorageUnavailableError`.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass, field, fields, replace
from typing import Any

from lightrag import LightRAG, QueryParam
from lightrag.operate import get_keywords_from_query, kg_query, naive_query
from lightrag.query_validation import validate_query_not_empty, validate_rag_query

from . import patches
from .backends.embedding_cache import with_embedding_cache
from .backends.local_embedder import MODEL_NAME as LOCAL_EMBEDDING_MODEL
from .backends.tokenizer import OfflineTokenizer
from .citations.answer import CITATION_INSTRUCTION
from .citations.attach import attach_citations, checked_answer
from .context import QueryContext
from .coordination import DEFAULT_INTERVAL, PipelineTurn, VersionWatcher
from .errors import LLMNotConfiguredError, describe_error, embedding_dimension_error, extra_install_hint
from .insert.api import InsertFeaturesMixin, install_insert_features
from .insert.extraction import extractor_status
from .insert.offline_llm import offline_llm, offline_model_name
from .keywords import extract_keywords
from .llm_faults import call_error, describe_cause, endpoint_of, llm_fault_endpoint, mark_llm_faults
from .param import KG_STOCK_MODES, STOCK_MODES, PrismQueryParam, perspectives_enabled
from .plugin_state import PluginState
from .query import PrismHooks, active_hooks, annotate, mode_kind, reads_keywords
from .retrievers import check_mode
from .retrievers.views.query_state import ensure_views, prepare_views
from .seam import PrismSeam
from .snapshot import GraphSnapshot, SnapshotCache
from .storages import prism_storage_class
from .storage_faults import storage_fault
from .threads import query_threads

logger = logging.getLogger(__name__)

# Public LightRAG methods that change the graph: the snapshot is invalidated after each (even if it failed midway).
# apipeline_process_enqueue_documents invalidates it itself (insert/api.py), before preparing the query indexes.
GRAPH_MUTATORS = (
    "ainsert_custom_kg", "adelete_by_doc_id", "adelete_by_entity",
    "adelete_by_relation", "aedit_entity", "aedit_relation", "acreate_entity", "acreate_relation",
    "amerge_entities",
)


OFFLINE_EXTRACTION_CONCURRENCY = 64  # extraction calls in flight without an LLM (one nlp.pipe batch)
# LightRAG schedules a run in pages of 500 documents and drains each page before the next: the tail of every page
# would run with few documents in flight.
OFFLINE_SCHEDULING_PAGE = 4096
# Documents in flight without an LLM. A document waits for about nine paced storage flushes in turn (group_commit.py:
# one flush round each, seconds on a large index); throughput is documents in flight / that latency, so an offline
# insert keeps a whole scheduling page in flight (with 1,024, the 3,000-passage benchmark slowed to 8.7 passages/s
# as flushes grew). LightRAG's parse and analyze stages (five workers each by default) wait for flushes too (full
# docs, doc status) and would otherwise cap it at a few documents per round.
OFFLINE_PARALLEL_INSERT = OFFLINE_PARALLEL_ANALYZE = OFFLINE_SCHEDULING_PAGE
OFFLINE_PARALLEL_PARSE = 256
LOCAL_EMBEDDING_CONCURRENCY = 16  # concurrent calls into the local embedder (merged into one worker request)
ANSWER_WITHOUT_LLM = ("raise", "context")
NO_LLM = "no LLM configured"  # the fallback reason when no LLM is configured (the note then says so)
NO_LLM_NOTE = ("[lightrag_prism] No LLM is configured, so no answer was generated. Below is the context retrieved "
               "for the query. Set PRISM_LLM_MODEL (and OPENAI_BASE_URL) to get answers.")

LLM_FAILED_NOTE = ("[lightrag_prism] The LLM failed ({reason}), so no answer was generated. Below is the context "
                   "retrieved for the query.")


def validated_query(query: str, param: QueryParam) -> tuple[str, PrismQueryParam]:
    """LightRAG's query checks (empty, too short for retrieval) and the mode check, before any other work."""
    if not isinstance(query, str):  # LightRAG's check fails on it with "'NoneType' object has no attribute 'strip'"
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    query = validate_query_not_empty(query)
    if param.mode != "bypass":
        query = validate_rag_query(query)
    param = as_prism_param(param)
    check_mode(param.mode)
    return query, param


# Client libraries of LightRAG's server-backed storages (by class-name prefix): LightRAG pip-installs a missing one
# when it imports the storage module, which fails offline with an unrelated-looking error.
STORAGE_CLIENTS = {"PG": ("asyncpg",), "PGVector": ("asyncpg", "pgvector"), "Redis": ("redis",)}


def check_storage_clients(storages) -> None:
    """One clear error naming the extra when a chosen storage's client library is not installed."""
    for name in map(str, storages):
        prefix = next((p for p in sorted(STORAGE_CLIENTS, key=len, reverse=True) if name.startswith(p)), None)
        missing = [m for m in STORAGE_CLIENTS.get(prefix, ()) if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"{name} needs {', '.join(missing)}, which the servers extra installs: "
                              f"{extra_install_hint('servers')}")


def naming_storage_faults(method):
    """A storage server that cannot be reached fails the query with one :class:`StorageUnavailableError`."""
    @functools.wraps(method)
    async def query(self, *args, **kwargs):
        try:
            return await method(self, *args, **kwargs)
        except Exception as exc:
            error = storage_fault(exc)
            if error is None:
                raise
            raise error from exc
    return query


def as_prism_param(param: QueryParam) -> PrismQueryParam:
    if isinstance(param, PrismQueryParam):
        return replace(param)
    return PrismQueryParam(**{f.name: getattr(param, f.name) for f in fields(QueryParam)})


def _invalidating(name: str):
    async def method(self, *args, **kwargs):
        try:
            with self.prism_seam.active():
                return await getattr(super(PrismRAG, self), name)(*args, **kwargs)
        finally:
            await self.publish_graph_change()

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"LightRAG.{name}, then :meth:`PrismRAG.publish_graph_change`."
    return method


@dataclass
class PrismRAG(InsertFeaturesMixin, LightRAG):
    # --- insert-time features (docs/insert-features.md) ---
    table_aware_chunking: bool = field(default=True)
    """Keep HTML tables whole (split on rows when too large) and extract them with table guidance. Installed only
    when no ``chunking_func`` is passed; text without a table is chunked exactly as LightRAG does."""
    timestamp_aware_summaries: bool = field(default=True)
    """Order ``[Time: ts]`` description fragments chronologically, ask summaries to keep them, verify, fall back."""
    entity_type_samples_per_text: int = field(default=3)
    """``entity_type_aug``: at most this many token windows per text are sent to the LLM."""
    entity_type_max_new: int = field(default=8)
    """``entity_type_aug``: at most this many new entity types are added per call."""
    agentic_merging_min_confidence: float = field(default=0.95)
    """Agentic merging: an LLM 'merge' decision is applied only at or above this confidence."""
    agentic_merging_top_k: int = field(default=5)
    """Agentic merging: nearest neighbours (cosine ≥ threshold) checked per entity."""
    embedding_cache_size: int = field(default=50_000)
    """Vectors kept by text (LRU): unchanged content is never re-embedded, and inserts embed new content in the
    background as soon as it is upserted, before the flush needs it. 0 disables both."""
    prepare_query_indexes: bool = field(default=True)
    """Inserts embed entity names and facts for the hipporag/prism indexes as they go and build those modes' graph
    views at the end, and ``initialize_storages`` builds them for an existing index, so the first query after an
    insert or a restart is as fast as the next ones. False: the first hipporag or prism query builds them instead
    (an instance that only uses stock modes saves that work)."""
    gc_freeze: bool = field(default=True)
    """After a large insert, and at start-up over a large index, Python's collector runs once and the objects that
    survive (the loaded index, most of them) go to its permanent generation (``gc.freeze``), so later collections do
    not scan the whole index again (``retrievers/views/query_state.py:settle_heap``). Process-wide; False: the
    collection alone."""
    group_commit: bool = field(default=True)
    """Coalesce storage flushes: one flush serves every document that asked for it while the previous flush ran
    (same durability as LightRAG's per-document flushes; see ``insert/group_commit.py``)."""
    incremental_writes: bool = field(default=True)
    """On the default file storages, a flush of the vector stores, the graph, the JSON KV stores and the doc status
    appends what changed to a journal beside the file instead of rewriting the file (``journal.py``,
    ``storages/``), so a small insert into a big index writes what it changed. Files are rewritten whole when their
    journal reaches half their size and at ``finalize_storages``. False: LightRAG's whole-file writes."""
    cite_answers: bool = field(default=True)
    """Answers cite their sources inline: the LLM is asked to put each chunk's ``reference_id`` in brackets after
    what it supports (``[1]``), and a marker that names no returned reference is taken out and recorded in
    ``metadata["prism"]["fallbacks"]`` (``citations/answer.py``). Every result's chunks carry a ``citation`` (file,
    pages, section, span) and its references their pages and sections, with or without this."""
    # --- without an LLM (docs/offline-graph.md) ---
    stock_mode_llm_fallbacks: bool = field(default=False)
    """The plugin's modes survive LLM faults: keywords fall back to the offline extractor, a failed answer raises
    :class:`LLMCallError` (or returns the context, see ``answer_without_llm``). True gives local/global/hybrid/mix/
    naive the same; False keeps LightRAG's behaviour there (its exceptions, its keyword step)."""
    answer_without_llm: str = field(default="raise")
    """What ``aquery``/``aquery_llm`` do when an answer is asked for and no LLM is configured: "raise"
    (:class:`LLMNotConfiguredError`) or "context" (return the retrieved context, headed by :data:`NO_LLM_NOTE`,
    with ``llm_generated`` False; ``lightrag-prism serve`` uses this)."""
    offline_extractor: str = field(default="auto")
    """Extractor used when no ``llm_model_func`` is given: "spacy" (needs the ``local`` extra), "regex", or "auto"
    (spaCy if installed, else regex; the fallback is logged and shown by ``offline_extractor_status``)."""
    shared_version_interval: float = field(default=DEFAULT_INTERVAL)
    """Seconds between two reads of the graph version other processes publish when they change the graph (one KV
    read each). Processes on the same storages (replicas over PostgreSQL or Redis, LightRAG Server's workers) see
    each other's inserts, deletes, edits and merges in the plugin's graph modes within this interval plus the
    rebuild, answering from the previous snapshot meanwhile. 0: never check (one process alone)."""
    offline_summary_max_tokens: int = field(default=128)
    """Without an LLM, an entity or relation description keeps its most informative distinct fragments within this
    many tokens (at most LightRAG's ``summary_max_tokens``); source ids are never dropped. 128 keeps a description
    and its name inside the local embedder's 256-token window, and a full description stops changing (and being
    re-embedded) when later documents mention the entity again."""
    prism_seam: PrismSeam | None = field(default=None, init=False, repr=False, compare=False)
    """Not a parameter: the one object through which LightRAG's stages reach this instance's plugin code, and the
    plugin's state of the instance (``seam.py``). It travels in LightRAG's ``global_config``."""

    def __post_init__(self, addon_params):
        self.prism_seam = PrismSeam(self)
        if self.tokenizer is None:
            self.tokenizer = OfflineTokenizer()
        if self.llm_model_func is None:
            note = NO_LLM_NOTE if self.answer_without_llm == "context" else None
            self.llm_model_func = offline_llm(self.offline_extractor, answer_note=note)
            self.llm_model_name = offline_model_name(self.offline_extractor)  # its own LLM-cache entries
        else:
            self.llm_endpoint = endpoint_of(self.llm_model_func)
            self.llm_model_func = mark_llm_faults(self.llm_model_func)
        if not self.llm_configured:
            self._offline_pipeline_settings()
        if self.answer_without_llm not in ANSWER_WITHOUT_LLM:
            raise ValueError(f"answer_without_llm must be one of {list(ANSWER_WITHOUT_LLM)}, got "
                             f"{self.answer_without_llm!r}")
        if not isinstance(self.shared_version_interval, (int, float)) or not self.shared_version_interval >= 0:
            raise ValueError(f"shared_version_interval must be a number of seconds >= 0, got "
                             f"{self.shared_version_interval!r}")
        if not isinstance(self.offline_summary_max_tokens, int) or self.offline_summary_max_tokens < 16:
            raise ValueError("offline_summary_max_tokens must be an int >= 16, got "
                             f"{self.offline_summary_max_tokens!r}")
        if getattr(self.embedding_func, "model_name", None) == LOCAL_EMBEDDING_MODEL:
            # The local embedder merges concurrent calls into one request to its worker process: let LightRAG
            # send several at once. Each waits behind the request in progress, hence the long timeout.
            self.embedding_func_max_async = max(self.embedding_func_max_async, LOCAL_EMBEDDING_CONCURRENCY)
            self.default_embedding_timeout = max(self.default_embedding_timeout, 600)
        if self.embedding_func is not None:
            self.embedding_func = with_embedding_cache(self.embedding_func, self.embedding_cache_size)
        install_insert_features(self)
        storages = (self.kv_storage, self.vector_storage, self.graph_storage, self.doc_status_storage)
        check_storage_clients(storages)
        if any(str(name).startswith("PG") for name in storages):
            patches.postgres.install()
        try:
            # builds the storages (a file-backed one loads its data here), LightRAG's defaults as ours (storages/)
            with patches.storage_classes.choosing(prism_storage_class):
                super().__post_init__(addon_params)
        except AssertionError as exc:
            error = embedding_dimension_error(exc, self.working_dir)
            if error is None:
                raise
            raise error from exc
        self._snapshots = SnapshotCache(self.chunk_entity_relation_graph, self.text_chunks)
        state = self.prism_seam.plugin_state = PluginState(self)  # opened by initialize_storages
        self.version_watcher = VersionWatcher(state, self._refresh_from_storage, self.shared_version_interval)
        self.prism_seam.pipeline_turn = PipelineTurn(state)

    def _offline_pipeline_settings(self) -> None:
        """Without a real LLM, extraction is local and fast: keep many documents in flight (see the constants)."""
        self.entity_extract_max_gleaning = 0  # a deterministic extractor has nothing to add on a second pass
        # Concurrent extraction calls are batched into one nlp.pipe: let many be in flight.
        self.llm_model_max_async = max(self.llm_model_max_async, OFFLINE_EXTRACTION_CONCURRENCY)
        self.max_parallel_insert = max(self.max_parallel_insert, OFFLINE_PARALLEL_INSERT)
        self.max_parallel_parse_native = max(self.max_parallel_parse_native, OFFLINE_PARALLEL_PARSE)
        self.max_parallel_analyze = max(self.max_parallel_analyze, OFFLINE_PARALLEL_ANALYZE)
        if 0 < self.pipeline_scheduling_page_size < OFFLINE_SCHEDULING_PAGE:
            self.pipeline_scheduling_page_size = OFFLINE_SCHEDULING_PAGE

    # --- state ---------------------------------------------------------------------------------------------
    @property
    def llm_configured(self) -> bool:
        return not getattr(self.llm_model_func, "is_offline_stand_in", False)

    @property
    def offline_extractor_status(self) -> dict[str, str | None] | None:
        """Which offline extractor inserts use (``{"extractor", "fallback_reason"}``); None with an LLM."""
        if self.llm_configured:
            return None
        return extractor_status(getattr(self.llm_model_func, "extractor", self.offline_extractor))

    async def graph_snapshot(self) -> GraphSnapshot:
        """The knowledge graph as CSR matrices, rebuilt lazily after any change (see ``snapshot.py``)."""
        return await self._snapshots.get()

    async def query_snapshot(self) -> GraphSnapshot:
        """:meth:`graph_snapshot` with the views the modes read (passage graph, facts, indexes) brought up to date
        first (``retrievers/views/query_state.py:ensure_views``): what ``QueryContext.snapshot`` hands a mode."""
        snapshot = await self.graph_snapshot()
        await ensure_views(self, snapshot)
        return snapshot

    def invalidate_snapshot(self) -> None:
        """The graph storage was written through its write methods: the next query's snapshot is the current one
        patched with what they wrote (``snapshot.py``). After any other change, :meth:`graph_changed`."""
        self._snapshots.invalidate()

    async def graph_changed(self) -> None:
        """Call after changing the graph directly (not through this instance's methods): this process's snapshot
        is read again whole, and other processes on the same storages learn of the change (``coordination.py``)."""
        self._snapshots.need_whole()
        await self.publish_graph_change()

    async def publish_graph_change(self) -> None:
        """After this instance changed the graph through its storage: the next query's snapshot is patched with
        the change, and the new graph version is published to other processes. Had another process changed the
        graph since this one last looked, the next snapshot reads everything (a patch would not show that)."""
        self.prism_seam.changes_graph = True  # from now on the views keep what incremental updates need
        self._snapshots.invalidate()
        try:
            foreign = await self.version_watcher.local_change()
        except Exception as exc:  # noqa: BLE001 - the change is stored; other processes catch up at their next write
            logger.warning("the graph changed but its new version could not be published to other processes "
                           "(%s)", describe_error(exc))
            foreign = True
        if foreign:
            self._snapshots.need_whole()

    async def _refresh_from_storage(self) -> None:
        """Another process changed the graph: a new snapshot with its views, swapped in when ready."""
        async def prepare(snapshot, base):
            if self.prepare_query_indexes:
                await prepare_views(self, snapshot, base)

        await self._snapshots.refresh(prepare)

    # --- queries -------------------------------------------------------------------------------------------
    def _guarded(self, param: PrismQueryParam) -> bool:
        """Whether LLM faults in this query fall back (plugin modes; stock modes when opted in)."""
        return param.mode not in STOCK_MODES or (self.stock_mode_llm_fallbacks and param.mode != "bypass")

    async def _prepare(self, query: str, param: PrismQueryParam) -> tuple[str, PrismQueryParam, list[dict]]:
        """Keywords for the KG path: offline without an LLM; from the LLM, falling back offline on a fault. A
        plugin mode that does not read them (``reads_keywords``) gets the offline ones and costs no LLM call."""
        fallbacks = []
        kg_path = param.mode in KG_STOCK_MODES or (param.mode not in STOCK_MODES and mode_kind(param.mode) == "kg")
        if not kg_path or param.hl_keywords or param.ll_keywords:
            return query, param, fallbacks
        if not reads_keywords(param):
            # LightRAG's kg_query still wants keywords (without any it answers "no results" to a query of 50 or
            # more characters): the offline ones stand in, and nothing fell back
            param.hl_keywords, param.ll_keywords = extract_keywords(query)
            return query, param, fallbacks
        reason = None if self.llm_configured else NO_LLM
        if reason is None and self._guarded(param):
            try:
                param.hl_keywords, param.ll_keywords = await get_keywords_from_query(
                    query, param, patches.build_global_config(self), self.llm_response_cache)
                if not (param.hl_keywords or param.ll_keywords):
                    reason = "the LLM's keyword answer held no keywords"
            except Exception as exc:  # noqa: BLE001 - any fault of the keyword call falls back
                reason = f"LLM error: {describe_cause(exc)}"
        if reason is not None:
            param.hl_keywords, param.ll_keywords = extract_keywords(query)
            fallbacks.append({"step": "keywords", "reason": f"{reason}: offline keyword extractor"})
        return query, param, fallbacks

    def _needs_hooks(self, param: PrismQueryParam) -> bool:
        return param.mode not in STOCK_MODES or (param.mode in KG_STOCK_MODES and perspectives_enabled(param))

    async def _run(self, query: str, param: PrismQueryParam, system_prompt, progress_callback):
        """Dispatch a query; returns (QueryResult | None, QueryContext)."""
        ctx = QueryContext(rag=self, query=query, param=param)
        global_config = patches.build_global_config(self)
        common = dict(hashing_kv=self.llm_response_cache, system_prompt=system_prompt,
                      progress_callback=progress_callback)
        with active_hooks(PrismHooks(ctx) if self._needs_hooks(param) else None):
            if param.mode == "naive" or (param.mode not in STOCK_MODES and mode_kind(param.mode) == "chunks"):
                result = await naive_query(query, self.chunks_vdb, param, global_config,
                                           text_chunks_db=self.text_chunks, **common)
            else:
                result = await kg_query(query, self.chunk_entity_relation_graph, self.entities_vdb,
                                        self.relationships_vdb, self.text_chunks, param, global_config,
                                        chunks_vdb=self.chunks_vdb, **common)
        await self.llm_response_cache.index_done_callback()
        return result, ctx

    def _metadata(self, ctx: QueryContext, fallbacks: list[dict]) -> dict[str, Any]:
        meta = dict(ctx.retrieval.metadata)
        meta["fallbacks"] = fallbacks + meta.get("fallbacks", [])
        meta["llm_configured"] = self.llm_configured
        return meta

    @naming_storage_faults
    @query_threads
    async def aquery_data(self, query: str, param: QueryParam = QueryParam()) -> dict[str, Any]:
        query, param = validated_query(query, param)  # first, as LightRAG does: before the instance is touched
        query, param, fallbacks = await self._prepare(query, param)
        if param.mode == "bypass":  # nothing retrieved: nothing to cite
            return await super().aquery_data(query, param)
        param = replace(param, only_need_context=True, only_need_prompt=False, stream=False)
        result, ctx = await self._run(query, param, None, None)
        if result is None:  # the same failure dict as stock aquery_data
            message = "No relevant document chunks found." if param.mode == "naive" else "Query returned no results"
            failure = {"status": "failure", "message": message, "data": {},
                       "metadata": {"failure_reason": "no_results", "mode": param.mode}}
            if self._needs_hooks(param) or fallbacks:
                failure["metadata"]["prism"] = self._metadata(ctx, fallbacks)
            return failure
        raw = annotate(result.raw_data or {}, ctx.retrieval)
        await attach_citations(self.text_chunks, raw)
        if self._needs_hooks(param) or fallbacks:  # stock modes with an LLM return LightRAG's output (plus citations)
            _plugin_metadata(raw, param.mode, self._metadata(ctx, fallbacks))
        return raw

    @naming_storage_faults
    @query_threads
    async def aquery_llm(self, query: str, param: QueryParam = QueryParam(), system_prompt: str | None = None,
                         progress_callback=None) -> dict[str, Any]:
        query, param = validated_query(query, param)
        query, param, fallbacks = await self._prepare(query, param)
        answers = not (param.only_need_context or param.only_need_prompt)
        if answers and self.cite_answers and self.llm_configured:
            param = replace(param, user_prompt="\n".join(filter(None, (param.user_prompt, CITATION_INSTRUCTION))))
        if answers and not self.llm_configured:
            if self.answer_without_llm == "raise":
                raise LLMNotConfiguredError(f"Answering a query (mode {param.mode!r})")
            return await self._context_instead_of_answer(query, param, NO_LLM)
        try:
            # LightRAG's own aquery_llm turns every error into a failure dict: only unguarded stock queries use it
            if param.mode in STOCK_MODES and not (self._needs_hooks(param) or fallbacks or self._guarded(param)):
                raw = await super().aquery_llm(query, param, system_prompt, progress_callback)
                notes: list[dict] = []  # a stream's dropped markers arrive once it has been read
                await self._cited(raw, answers, notes)
                if notes or (raw.get("llm_response") or {}).get("is_streaming"):
                    raw.setdefault("metadata", {}).setdefault("prism", {})["fallbacks"] = notes
                return raw
            result, ctx = await self._run(query, param, system_prompt, progress_callback)
        except Exception as exc:
            endpoint = llm_fault_endpoint(exc, getattr(self, "llm_endpoint", "the LLM"))
            if not (answers and endpoint and self._guarded(param)):
                raise
            if self.answer_without_llm == "raise":
                raise call_error(f"Answering a query (mode {param.mode!r})", endpoint, exc) from exc
            return await self._context_instead_of_answer(query, param, f"LLM error: {describe_cause(exc)}")
        meta = self._metadata(ctx, fallbacks)
        if result is None:
            return {"status": "failure", "message": "Query returned no results", "data": {},
                    "metadata": {"failure_reason": "no_results", "mode": param.mode, "prism": meta},
                    "llm_response": {"content": None, "response_iterator": None, "is_streaming": False,
                                     "llm_generated": False}}
        raw = annotate(result.raw_data or {}, ctx.retrieval)
        _plugin_metadata(raw, param.mode, meta)
        raw["llm_response"] = {
            "content": None if result.is_streaming else result.content,
            "response_iterator": result.response_iterator if result.is_streaming else None,
            "is_streaming": result.is_streaming, "llm_generated": result.llm_generated,
        }
        await self._cited(raw, answers, meta["fallbacks"])
        return raw

    async def _cited(self, raw: dict[str, Any], answers: bool, fallbacks: list[dict]) -> None:
        """Citations on the chunks and references; an LLM's answer with its made-up ``[n]`` markers taken out."""
        if raw.get("status") != "success":
            return
        await attach_citations(self.text_chunks, raw)
        if answers and self.cite_answers and (raw.get("llm_response") or {}).get("llm_generated", True):
            checked_answer(raw, fallbacks)

    async def _context_instead_of_answer(self, query: str, param: PrismQueryParam, reason: str) -> dict[str, Any]:
        """``answer_without_llm="context"``: the aquery_llm result with the retrieved context as its content."""
        if param.mode == "bypass":  # nothing is retrieved in bypass mode
            result: dict[str, Any] = {"status": "success", "message": NO_LLM, "data": {},
                                      "metadata": {"mode": "bypass"}}
            context = ""
        else:
            result = await self.aquery_llm(query, replace(param, only_need_context=True, stream=False))
            context = (result.get("llm_response") or {}).get("content") or ""
        result.setdefault("metadata", {}).setdefault("prism", {}).setdefault("fallbacks", []).append(
            {"step": "answer", "reason": f"{reason}: retrieved context returned instead"})
        note = NO_LLM_NOTE if reason == NO_LLM else LLM_FAILED_NOTE.format(reason=reason)
        result["llm_response"] = {"content": f"{note}\n\n{context}".rstrip(), "response_iterator": None,
                                  "is_streaming": False, "llm_generated": False}
        return result

    # --- LightRAG's graph-changing methods, each followed by publish_graph_change (GRAPH_MUTATORS) ----------
    ainsert_custom_kg = _invalidating("ainsert_custom_kg")
    adelete_by_doc_id = _invalidating("adelete_by_doc_id")
    adelete_by_entity = _invalidating("adelete_by_entity")
    adelete_by_relation = _invalidating("adelete_by_relation")
    aedit_entity = _invalidating("aedit_entity")
    aedit_relation = _invalidating("aedit_relation")
    acreate_entity = _invalidating("acreate_entity")
    acreate_relation = _invalidating("acreate_relation")
    amerge_entities = _invalidating("amerge_entities")

    async def _process_extract_entities(self, chunks, pipeline_status=None, pipeline_status_lock=None,
                                        truncation_tally=None):
        """LightRAG's extraction step, through the seam (offline extractor, table prompts, timestamps)."""
        return await self.prism_seam.extract(super()._process_extract_entities, chunks, pipeline_status,
                                             pipeline_status_lock, truncation_tally)


def _plugin_metadata(raw: dict[str, Any], mode: str, prism: dict[str, Any]) -> None:
    metadata = raw.setdefault("metadata", {})
    metadata["prism"] = prism
    if "query_mode" in metadata:  # a "chunks" mode answers through naive_query, which reports "naive"
        metadata["query_mode"] = mode
