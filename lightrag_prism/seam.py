"""The one object through which LightRAG's stages reach a PrismRAG instance: ``PrismRAG.prism_seam``.

LightRAG 1.5.7 has no hook in the stages the plugin changes. Every way in ends at this per-instance object:

* storage classes (``lightrag.lightrag.get_storage_class``): ``patches/storage_classes.py`` asks the PrismRAG only
  while its ``__post_init__`` runs, and gets ``lightrag_prism/storages/``;
* chunking: the instance's ``chunking_func`` (``insert/pipeline.py:make_prism_chunker``);
* extraction (``LightRAG._process_extract_entities``): ``PrismRAG``'s override calls :meth:`PrismSeam.extract`;
* description merge (``operate._handle_entity_relation_summary``): wrapped in ``patches/insert_hooks.py``, which
  finds the seam in the ``global_config`` it is given: :meth:`PrismSeam.summary`;
* rebuild after a deletion (``operate._rebuild_from_extraction_result``): the same, through the text-chunks
  storage's ``global_config``: :meth:`PrismSeam.rebuild`;
* the extraction-text normalisers (``operate.normalize_entity_name``, ...): memoised by
  ``patches/normalize_memo.py`` while :meth:`PrismSeam.active` (a PrismRAG's insert or deletion);
* flushes: the instance's storages (``storages/``) and their group commit (``insert/group_commit.py``);
* query stage 1 and naive retrieval (``operate._perform_kg_search``, ``_get_vector_context``): wrapped in
  ``patches/__init__.py``; ``PrismRAG`` puts the query's hooks (``query.py``) in ``patches.ACTIVE_HOOKS`` for one
  query.

A plain ``LightRAG`` has no seam, so every wrapper leaves it to LightRAG's own code. The seam travels in
``global_config``, which LightRAG builds with ``dataclasses.asdict`` (a deep copy of every field): it copies to
itself. It also holds the instance's plugin state (what used to be loose ``_prism_*`` attributes).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from . import patches
from .insert.merging.rebuild import rebuild_hook
from .insert.summaries import prism_summary


class PrismSeam:
    """Per-instance: the stages' ways into the plugin, and the plugin's state of the instance."""

    def __init__(self, rag) -> None:
        self.rag = rag
        self.plugin_state: Any = None  # PluginState (plugin_state.py), made in PrismRAG.__post_init__
        self.insert_hooks: Any = None  # InsertHooks (insert/pipeline.py): timestamps, extraction
        self.commit_policy: Any = None  # CommitPolicy (insert/group_commit.py)
        self.pipeline_turn: Any = None  # PipelineTurn (coordination.py): one pipeline run at a time
        self.journaled: list = []  # the journal states of the instance's files (storages/registration.py)
        self.prefetch: Any = None  # embedding prefetch of the query indexes (insert/prefetch.py)
        self.flushes: dict = {}  # the storages' paced flushes (insert/group_commit.py)
        self.views: dict = {}  # the query views' state (retrievers/views/passage_graph.py: indexes, synonyms)
        # Set by the instance's first change of the graph (PrismRAG.publish_graph_change): from then on the views
        # keep what incremental updates need (FastRP's powers); a process that only queries, or whose pipeline
        # runs found nothing to do, does without (retrievers/views/fastrp.py).
        self.changes_graph = False

    @contextmanager
    def active(self):
        """Around an insert or a deletion: the wrappers of stages that get no config (the extraction-text
        normalisers, ``patches/normalize_memo.py``) serve this run, and the tasks it starts."""
        with patches.seam_active(self):
            yield

    def __deepcopy__(self, memo) -> "PrismSeam":
        return self  # one seam per instance, whatever copies LightRAG makes of its config

    def __copy__(self) -> "PrismSeam":
        return self

    async def extract(self, original, chunks: dict, pipeline_status, pipeline_status_lock, truncation_tally) -> list:
        """``LightRAG._process_extract_entities``: the offline extractor or the LLM with table prompts."""
        return await self.insert_hooks.extract(original, chunks, pipeline_status, pipeline_status_lock,
                                               truncation_tally)

    async def summary(self, original, arguments: dict[str, Any]) -> tuple[str, bool]:
        """``operate._handle_entity_relation_summary`` (``arguments`` by name): bounded offline descriptions or
        timestamp-aware summaries (``insert/summaries.py``)."""
        return await prism_summary(original, arguments)

    async def rebuild(self, text_chunks, chunk_id: str, chunk_data: dict, nodes: dict, edges: dict):
        """After ``operate._rebuild_from_extraction_result`` parsed a chunk's cached extraction again: the names
        and prefixes the insert gave (``insert/merging/rebuild.py``)."""
        return await rebuild_hook(text_chunks, chunk_id, chunk_data, nodes, edges)
