"""Insert-time hooks into LightRAG 1.5.7 private symbols (timestamps, table guidance, sync wrappers).

The private symbols used, each behind one small function here:

* ``LightRAG._process_extract_entities(self, chunks, pipeline_status, pipeline_status_lock, truncation_tally)``:
  overridden by ``PrismRAG``, which hands LightRAG's bound method and the chunks to its seam (``seam.py``).
* ``lightrag.operate._handle_entity_relation_summary``: the map-reduce description merge, looked up as a module
  global at call time by ``_merge_nodes_then_upsert``/``_merge_edges_then_upsert`` and the rebuild-after-delete
  path. Wrapped once at import; the wrapper hands it to the instance's seam when the ``global_config`` dict (which
  is ``asdict(rag)``) holds one (:func:`seam_of`), i.e. only for PrismRAG instances (bounded offline descriptions,
  timestamp-aware summaries, or LightRAG's own). Plain LightRAG instances are unaffected.
* ``lightrag.operate._rebuild_from_extraction_result``: re-parses a chunk's cached extraction when
  ``adelete_by_doc_id`` rebuilds shared entities. Wrapped once at import; for PrismRAG storages (their
  ``global_config`` holds the seam) the seam post-processes the parsed records (timestamps, merged-entity
  aliases), so a rebuild sees the same names and prefixes as the insert did.
* ``lightrag.lightrag._run_sync``: how LightRAG drives a coroutine from a sync wrapper (same loop checks).
* ``lightrag.operate._process_extraction_result``: LightRAG's parser of extraction rows. The offline extractor's
  rows go through it (:func:`parse_extraction_rows`), so names, types and descriptions are normalised exactly as
  for an LLM's answer.
* the private ``LightRAG._entity_extraction_prompt_profile`` field (copied into ``global_config``):
  :func:`config_with_extra_guidance` appends text to the entity-type guidance of one config copy (table chunks).
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable

from .private import register_symbols, wrap_once

_SYMBOLS = [
    ("lightrag.lightrag", "LightRAG._process_extract_entities", 5),
    ("lightrag.operate", "_handle_entity_relation_summary", 8),
    ("lightrag.lightrag", "_run_sync", 4),
    ("lightrag.operate", "_rebuild_from_extraction_result", 5),
    ("lightrag.operate", "_process_extraction_result", 7),
]
register_symbols(*_SYMBOLS)

_PROFILE_FIELD = "_entity_extraction_prompt_profile"


def _check_profile_field() -> None:
    from lightrag import LightRAG

    if _PROFILE_FIELD not in getattr(LightRAG, "__dataclass_fields__", {}):
        from .private import _fail

        _fail(f"LightRAG.{_PROFILE_FIELD} is missing")


_check_profile_field()


def config_with_extra_guidance(rag, extra: str) -> dict[str, Any]:
    """A fresh ``global_config`` whose extraction prompts get ``extra`` after the entity-type guidance."""
    from .private import build_global_config

    config = build_global_config(rag)
    profile = dict(config.get(_PROFILE_FIELD) or {})
    if "entity_types_guidance" not in profile:
        from lightrag.prompt import resolve_entity_extraction_prompt_profile

        profile = dict(resolve_entity_extraction_prompt_profile(
            config.get("addon_params"), bool(config.get("entity_extraction_use_json", False))))
    profile["entity_types_guidance"] = str(profile["entity_types_guidance"]).rstrip() + "\n\n" + extra
    config[_PROFILE_FIELD] = profile
    return config


SUMMARY_FLAG = "timestamp_aware_summaries"
SEAM_KEY = "prism_seam"  # PrismRAG's field: its PrismSeam, in every global_config LightRAG builds from it


def seam_of(config) -> Any:
    """The PrismSeam in a LightRAG ``global_config`` (None: a plain LightRAG's config)."""
    return config.get(SEAM_KEY) if isinstance(config, dict) else None


def _summary_wrapper(original):
    signature = inspect.signature(original)

    async def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        seam = seam_of(arguments.get("global_config"))
        if seam is None:
            return await original(*args, **kwargs)
        return await seam.summary(original, arguments)

    return wrapper


def _rebuild_wrapper(original):
    async def wrapper(text_chunks_storage, extraction_result, chunk_id, timestamp, chunk_data=None):
        nodes, edges = await original(text_chunks_storage, extraction_result, chunk_id, timestamp, chunk_data)
        seam = seam_of(getattr(text_chunks_storage, "global_config", None))
        if seam is None:
            return nodes, edges
        if chunk_data is None:
            chunk_data = await text_chunks_storage.get_by_id(chunk_id)
        return await seam.rebuild(text_chunks_storage, chunk_id, chunk_data or {}, nodes, edges)

    return wrapper


async def parse_extraction_rows(rows: str, chunk_id: str, timestamp: int, file_path: str) -> tuple[dict, dict]:
    """``(nodes, edges)`` as LightRAG's extraction returns them for one chunk, parsed from rows in its format."""
    from lightrag.operate import _process_extraction_result

    return await _process_extraction_result(rows, chunk_id, timestamp, file_path)


def run_sync(rag, coro_factory: Callable[[], Awaitable[Any]], name: str) -> Any:
    """Run ``coro_factory()`` to completion from sync code the way LightRAG's own sync wrappers do."""
    from lightrag.lightrag import _run_sync

    return _run_sync(coro_factory, sync_name=name, async_name=f"a{name}",
                     owning_loop=getattr(rag, "_owning_loop", None))


def _install() -> None:
    from lightrag import operate

    wrap_once(operate, "_handle_entity_relation_summary", _summary_wrapper)
    wrap_once(operate, "_rebuild_from_extraction_result", _rebuild_wrapper)


_install()
