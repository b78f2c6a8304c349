"""PrismRAG's insert-time public API (a mixin; the knobs are PrismRAG dataclass fields, see ``rag.py``).

* ``ainsert(input, ..., timestamps=None, agentic_merging=False, agentic_merging_threshold=0.8)`` / ``insert``;
* ``aentity_type_aug(texts=None, input_folder=None, force_refresh=False)`` / ``entity_type_aug``;
* ``aagentic_merge(entities=None, threshold=0.8)`` / ``agentic_merge``;
* ``initialize_storages`` also rolls forward merges interrupted by a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from lightrag.base import DocStatus
from lightrag.chunker.token_size import chunking_by_token_size

from .. import journal, patches
from ..storages import adopt_shared_namespaces, register_files
from ..backends.embedding_cache import embedding_cache_of
from .group_commit import PACED_MIN_PARALLEL, CallsInFlight, CommitPolicy, install_group_commit
from .prefetch import install_prefetch
from ..citations.layout import mark_pages
from ..plugin_state import PluginState, plugin_state, register, unregister
from .entity_types.discovery import STATE_DOCUMENT as ENTITY_TYPES_DOCUMENT
from .entity_types.discovery import discover_entity_types, load_state, read_folder
from .merging.agentic import agentic_merge, roll_forward
from .pipeline import InsertHooks, content_key, make_prism_chunker
from ..retrievers.views.passage_graph import forget_hippo_state
from ..retrievers.views.query_state import SETTLE_MIN_NODES, index_items, prepare_query_state
from .merging.rebuild import aliases_read_once
from .recovery import repair_recovery_anchors
from .state_migration import migrate_state_files
from .timestamps import store as timestamp_store
from .timestamps.markers import validate_timestamps

logger = logging.getLogger(__name__)


def install_insert_features(rag) -> None:
    """Before ``LightRAG.__post_init__``: the insert hooks object and the wrapped chunking function."""
    hooks = InsertHooks(rag)
    rag.prism_seam.insert_hooks = hooks
    llm_calls = CallsInFlight()  # a paced flush waits out its round while LLM answers or vectors are awaited
    rag.llm_model_func = llm_calls.wrap(rag.llm_model_func)
    rag.prism_seam.commit_policy = CommitPolicy(busy=lambda: llm_calls.count > 0 or _embeddings_in_flight(rag))
    user_chunker = None if rag.chunking_func is chunking_by_token_size else rag.chunking_func
    embed_max = getattr(rag.embedding_func, "max_token_size", None) if rag.embedding_func is not None else None
    rag.chunking_func = make_prism_chunker(user_chunker, hooks.timestamps, table_aware=rag.table_aware_chunking,
                                           embed_max_tokens=embed_max or None, find_stored=hooks.find_stored)


def _embeddings_in_flight(rag) -> bool:
    cache = embedding_cache_of(rag.embedding_func)
    return cache is not None and cache.in_flight > 0


_DONE_STATUSES = {DocStatus.PROCESSED.value, "all"}


async def save_doc_timestamps(rag, stamps: dict[str, str]) -> None:
    """Store content key → timestamp (one record each), so a document retried by a later process, or processed
    by another process on the same storages, keeps its timestamp."""
    hooks = rag.prism_seam.insert_hooks
    hooks.timestamps.update(stamps)
    await timestamp_store.save(plugin_state(rag), stamps)
    hooks.timestamps_stored = hooks.timestamps_stored or bool(stamps)


async def load_doc_timestamps(rag) -> None:
    """Whether the storages hold timestamps (the chunker then looks up the ones it lacks), and the legacy map."""
    hooks, state = rag.prism_seam.insert_hooks, plugin_state(rag)
    hooks.timestamps.update(await timestamp_store.load_legacy(state))
    hooks.timestamps_stored = await timestamp_store.in_use(state)


async def open_plugin_state(rag) -> None:
    """In ``initialize_storages``: open the plugin's KV namespaces, move working-dir files written by earlier
    versions into them, then reload document timestamps and discovered entity types."""
    state: PluginState = plugin_state(rag)
    await state.initialize()
    register(rag, state)
    await migrate_state_files(rag, state)
    await load_doc_timestamps(rag)
    await restore_entity_types(rag)


async def clear_derived_state(rag) -> None:
    """After the graph was dropped (LightRAG Server's "clear documents" drops every LightRAG storage): forget what
    the plugin derived from the documents. Discovered entity types describe the domain, not the documents: kept."""
    rag.invalidate_snapshot()
    forget_hippo_state(rag)
    rag.prism_seam.insert_hooks.timestamps.clear()
    rag.prism_seam.insert_hooks.timestamps_stored = False
    state = plugin_state(rag)
    if state.ready:
        await state.clear(keep=(ENTITY_TYPES_DOCUMENT,))
        await rag.graph_changed()


def watch_graph_storage(rag) -> None:
    """Wrap two public methods of the instance's graph storage: ``drop()`` also clears the plugin's derived state,
    and every flush (``index_done_callback``) invalidates the snapshot. LightRAG marks a document processed only
    after its flush, so a query that sees it processed never answers from a snapshot taken before it (the end of
    the pipeline run, where the snapshot is rebuilt, comes later)."""
    graph = rag.chunk_entity_relation_graph
    if getattr(graph.drop, "_prism_clears_state", False):
        return
    drop, flush = graph.drop, graph.index_done_callback

    async def drop_and_clear():
        try:
            return await drop()
        finally:
            await clear_derived_state(rag)

    async def flush_and_invalidate():
        try:
            return await flush()
        finally:
            rag.invalidate_snapshot()

    drop_and_clear._prism_clears_state = True
    graph.drop, graph.index_done_callback = drop_and_clear, flush_and_invalidate


async def close_plugin_state(rag) -> None:
    unregister(rag)
    await plugin_state(rag).finalize()


async def restore_entity_types(rag) -> None:
    """Reapply entity types discovered by an earlier instance."""
    state = await load_state(rag)
    if not state:
        return
    current = rag.addon_params.get("entity_types_guidance")
    if current is None or current == state.get("base_guidance"):
        rag.addon_params["entity_types_guidance"] = state["guidance"]
        logger.info("restored %d discovered entity type(s)", len(state.get("discovered", [])))


def embedder_hook(rag, name: str):
    """An optional hook of the instance's embedding function (the local embedder's ``prepare_queries`` and
    ``prepare_documents``), found under LightRAG's wrappers; None when it has none."""
    return getattr(inspect.unwrap(rag.embedding_func.func), name, None)


def _check_threshold(threshold: float) -> float:
    if not isinstance(threshold, (int, float)) or not 0.0 < float(threshold) <= 1.0:
        raise ValueError(f"agentic_merging_threshold must be a cosine in (0, 1], got {threshold!r}")
    return float(threshold)


async def compact_journals(rag) -> None:
    """At ``finalize_storages``: every journaled file rewritten whole (stock LightRAG can read the directory), under
    its storage's lock when other processes write it too (``FileState.guard``)."""
    states, rag.prism_seam.journaled = rag.prism_seam.journaled, []
    for state in states:
        async with state.guard() if state.guard is not None else contextlib.nullcontext():
            await asyncio.to_thread(journal.compact, state)
        journal.unregister(state.file_name)


def insert_documents(input) -> list[str]:
    """The documents of an ``ainsert`` call: one str, or an iterable of str (materialised once, so a generator
    works). Anything else is one TypeError naming it, before any storage is touched (LightRAG's own check failed
    deep in its pipeline: "'NoneType' object is not iterable"). A mapping is refused: its keys are not documents."""
    if isinstance(input, str):
        return [input]
    if isinstance(input, (bytes, bytearray, Mapping)) or not hasattr(input, "__iter__"):
        raise TypeError(f"ainsert takes a str or a list of str, got {type(input).__name__}")
    docs = list(input)
    for index, doc in enumerate(docs):
        if not isinstance(doc, str):
            raise TypeError(f"ainsert: document {index} is {type(doc).__name__}, not str")
    return docs


class InsertFeaturesMixin:
    last_merge_report: dict[str, Any] | None = None

    async def initialize_storages(self):
        if self.incremental_writes:  # before the storages load their files: loading notes what is on disk
            self.prism_seam.journaled = register_files(self)
        await super().initialize_storages()
        await open_plugin_state(self)
        if self.incremental_writes:
            adopt_shared_namespaces(self)
        watch_graph_storage(self)
        if self.group_commit:
            self.prism_seam.flushes = install_group_commit(self, self.prism_seam.commit_policy)
        feed = partial(index_items, self) if self.prepare_query_indexes else None
        if self.embedding_cache_size > 0 or feed is not None:
            self.prism_seam.prefetch = install_prefetch(self, feed, content=self.embedding_cache_size > 0)

        outcomes = await roll_forward(self)
        if outcomes:
            logger.warning("finished %d interrupted merge(s) at startup", len(outcomes))
        await self.version_watcher.adopt_current()
        if self.prepare_query_indexes:  # a restarted process answers its first hipporag/prism query warm
            await prepare_query_state(self, settle_from=SETTLE_MIN_NODES)  # the loaded index: see settle_heap
            prepare_queries = embedder_hook(self, "prepare_queries")
            if prepare_queries is not None:  # the local embedder's in-process query encoder
                await asyncio.to_thread(prepare_queries)
        self.version_watcher.start()

    async def ainsert(self, input, split_by_character=None, split_by_character_only=False, ids=None,
                      file_paths=None, track_id=None, *, timestamps=None, agentic_merging: bool = False,
                      agentic_merging_threshold: float = 0.8) -> str:
        """LightRAG's ``ainsert`` plus per-document ``timestamps`` and agentic merging of the new entities. A
        document's form feeds (page breaks) become page markers its chunks' citations read (``citations/``)."""
        docs = [mark_pages(doc) for doc in insert_documents(input)]
        stamps = validate_timestamps(timestamps, len(docs)) if timestamps is not None else None
        threshold = _check_threshold(agentic_merging_threshold) if agentic_merging else None
        if stamps:
            await save_doc_timestamps(self, {content_key(doc): ts for doc, ts in zip(docs, stamps)})
        graph = self.chunk_entity_relation_graph
        before = set(await graph.get_all_labels()) if agentic_merging else set()
        track = await super().ainsert(docs, split_by_character, split_by_character_only, ids, file_paths, track_id)
        if agentic_merging:
            new = sorted(set(await graph.get_all_labels()) - before)
            self.last_merge_report = await agentic_merge(self, new, threshold)
            if self.prepare_query_indexes:  # the pipeline run prepared them before the merge changed the graph
                await prepare_query_state(self)
        return track

    async def finalize_storages(self):
        await self.version_watcher.stop()
        prefetch = self.prism_seam.prefetch
        if prefetch is not None:
            await prefetch.close()
        await close_plugin_state(self)
        await super().finalize_storages()
        await compact_journals(self)

    async def apipeline_enqueue_documents(self, input, *args, **kwargs):
        """LightRAG's enqueue, with page breaks as page markers (LightRAG's sanitiser deletes form feeds); LightRAG
        Server's ``/documents/text`` comes in here."""
        if isinstance(input, str):
            input = mark_pages(input)
        elif isinstance(input, list):
            input = [mark_pages(doc) if isinstance(doc, str) else doc for doc in input]
        return await super().apipeline_enqueue_documents(input, *args, **kwargs)

    async def apipeline_process_enqueue_documents(self, *args, **kwargs):
        """LightRAG's pipeline run, one at a time among every process on these storages (its own ``busy`` flag
        covers one server: ``coordination.PipelineTurn``); with many documents in flight, storage flushes are paced
        (group commit). Then, with ``prepare_query_indexes``, the hipporag/prism query state is brought up to date
        (``query_state.py``)."""
        with self.prism_seam.active():  # this run and the tasks it starts (seam.py)
            async with self.prism_seam.pipeline_turn():
                counts = await self.doc_status.get_status_counts()
                backlog = sum(n for status, n in counts.items() if status not in _DONE_STATUSES)
                paced = min(backlog, self.max_parallel_insert) >= PACED_MIN_PARALLEL
                if backlog:  # documents a crash interrupted are purged before their retry: their anchors must exist
                    # the local embedder's workers start while documents are extracted
                    prepare_documents = embedder_hook(self, "prepare_documents")
                    if prepare_documents is not None:
                        prepare_documents()
                    await repair_recovery_anchors(self)
                    await load_doc_timestamps(self)  # another instance on the same storages may have queued some
                try:
                    with self.prism_seam.commit_policy.bulk(paced):
                        result = await super().apipeline_process_enqueue_documents(*args, **kwargs)
                finally:
                    # The graph may have changed (even if the run failed midway); a run that found nothing to do
                    # (nothing was queued) changed nothing other processes must reload.
                    if backlog or await self.doc_status.get_status_counts() != counts:
                        await self.publish_graph_change()
                    else:
                        self.invalidate_snapshot()
            if self.prepare_query_indexes:  # every way in (ainsert, LightRAG Server uploads and scans) ends here
                await prepare_query_state(self, settle_from=0 if backlog >= PACED_MIN_PARALLEL else None)
        return result

    async def adelete_by_doc_id(self, *args, **kwargs):
        """LightRAG's ``adelete_by_doc_id``, in this process's pipeline turn; its rebuild of shared entities reads
        the alias file once."""
        async with self.prism_seam.pipeline_turn():
            with aliases_read_once():
                return await super().adelete_by_doc_id(*args, **kwargs)

    async def ainsert_custom_chunks(self, *args, **kwargs):
        """LightRAG's ``ainsert_custom_chunks``, in this process's pipeline turn."""
        async with self.prism_seam.pipeline_turn():
            return await super().ainsert_custom_chunks(*args, **kwargs)

    def insert(self, input, split_by_character=None, split_by_character_only=False, ids=None, file_paths=None,
               track_id=None, *, timestamps=None, agentic_merging: bool = False,
               agentic_merging_threshold: float = 0.8) -> str:
        return patches.insert_hooks.run_sync(self, lambda: self.ainsert(
            input, split_by_character, split_by_character_only, ids, file_paths, track_id, timestamps=timestamps,
            agentic_merging=agentic_merging, agentic_merging_threshold=agentic_merging_threshold), "insert")

    async def aentity_type_aug(self, texts: list[str] | str | None = None, input_folder: str | None = None,
                               force_refresh: bool = False) -> dict[str, Any]:
        """Discover domain-specific entity types from ``texts`` or the .txt/.md files of ``input_folder``."""
        if texts is None and input_folder is None:
            raise ValueError("entity_type_aug needs texts=[...] or input_folder='...'")
        sources = ([texts] if isinstance(texts, str) else list(texts or []))
        if input_folder is not None:
            sources += read_folder(input_folder)
        return await discover_entity_types(self, sources, force_refresh=force_refresh)

    def entity_type_aug(self, texts: list[str] | str | None = None, input_folder: str | None = None,
                        force_refresh: bool = False) -> dict[str, Any]:
        return patches.insert_hooks.run_sync(
            self, lambda: self.aentity_type_aug(texts, input_folder, force_refresh), "entity_type_aug")

    async def aagentic_merge(self, entities: list[str] | None = None, threshold: float = 0.8) -> dict[str, Any]:
        """Merge duplicates of ``entities`` (``None``: every entity, still top-k per entity, never N×N)."""
        self.last_merge_report = await agentic_merge(self, entities, _check_threshold(threshold))
        return self.last_merge_report

    def agentic_merge(self, entities: list[str] | None = None, threshold: float = 0.8) -> dict[str, Any]:
        return patches.insert_hooks.run_sync(self, lambda: self.aagentic_merge(entities, threshold),
                                             "agentic_merge")
