"""Insert-time hooks into LightRAG 1.5.7 private symbols (timestamps, table guidance, sync wrappers).

Three private symbols are used, each behind one small function here:

* ``LightRAG._process_extract_entities(self, chunks, pipeline_status, pipeline_status_lock, truncation_tally)``:
  :func:`install_extract_hook` replaces it on a subclass with a method that hands the original (bound) and the
  chunks to a hook object (``rag._prism_insert_hooks``); no hook → the original, unchanged.
* ``lightrag.operate._handle_entity_relation_summary``: the map-reduce description merge, looked up as a module
  global at call time by ``_merge_nodes_then_upsert``/``_merge_edges_then_upsert`` and the rebuild-after-delete
  path. Wrapped once at import; the wrapper calls the registered hook only when the ``global_config`` dict (which
  is ``asdict(rag)``) has a ``timestamp_aware_summaries`` field, i.e. only for PrismRAG instances (the hook then
  decides: bounded offline descriptions, timestamp-aware summaries, or LightRAG's own). Plain LightRAG instances
  are unaffected.
* ``lightrag.operate._rebuild_from_extraction_result``: re-parses a chunk's cached extraction when
  ``adelete_by_doc_id`` rebuilds shared entities. Wrapped once at import; for PrismRAG storages (their
  ``global_config`` has the ``timestamp_aware_summaries`` key) the registered hook post-processes the parsed
  records (timestamps, merged-entity aliases), so a rebuild sees the same names and prefixes as the insert did.
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
SummaryHook = Callable[[Callable[..., Awaitable[tuple[str, bool]]], dict[str, Any]], Awaitable[tuple[str, bool]]]
_summary_hook: list[SummaryHook] = []


def register_summary_hook(hook: SummaryHook) -> None:
    """Install the function called instead of ``_handle_entity_relation_summary`` for flagged configs."""
    _summary_hook[:] = [hook]


def _summary_wrapper(original):
    signature = inspect.signature(original)

    async def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if not _summary_hook or SUMMARY_FLAG not in (arguments.get("global_config") or {}):
            return await original(*args, **kwargs)
        return await _summary_hook[0](original, arguments)

    return wrapper


_rebuild_hook: list[Callable] = []


def register_rebuild_hook(hook: Callable) -> None:
    """``await hook(text_chunks_storage, chunk_id, chunk_data, nodes, edges) -> (nodes, edges)``."""
    _rebuild_hook[:] = [hook]


def _rebuild_wrapper(original):
    async def wrapper(text_chunks_storage, extraction_result, chunk_id, timestamp, chunk_data=None):
        nodes, edges = await original(text_chunks_storage, extraction_result, chunk_id, timestamp, chunk_data)
        config = getattr(text_chunks_storage, "global_config", None) or {}
        if not _rebuild_hook or SUMMARY_FLAG not in config:
            return nodes, edges
        if chunk_data is None:
            chunk_data = await text_chunks_storage.get_by_id(chunk_id)
        return await _rebuild_hook[0](text_chunks_storage, chunk_id, chunk_data or {}, nodes, edges)

    return wrapper


def install_extract_hook(cls: type) -> None:
    """Give ``cls`` a ``_process_extract_entities`` that defers to ``self._prism_insert_hooks.extract`` if set.

    The hook is awaited as ``hook.extract(original, chunks, pipeline_status, pipeline_status_lock,
    truncation_tally)`` where ``original`` is LightRAG's bound method.
    """
    from lightrag import LightRAG

    original = LightRAG._process_extract_entities

    async def _process_extract_entities(self, chunks, pipeline_status=None, pipeline_status_lock=None,
                                        truncation_tally=None):
        bound = original.__get__(self, type(self))
        hooks = getattr(self, "_prism_insert_hooks", None)
        if hooks is None:
            return await bound(chunks, pipeline_status, pipeline_status_lock, truncation_tally=truncation_tally)
        return await hooks.extract(bound, chunks, pipeline_status, pipeline_status_lock, truncation_tally)

    cls._process_extract_entities = _process_extract_entities


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
