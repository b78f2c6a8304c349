"""How PrismRAG runs a query: mode dispatch, the hooks into LightRAG's pipeline, and result annotation.

* Stock modes without perspectives run LightRAG's code untouched (no hooks are set).
* Stock KG modes with perspective knobs run LightRAG's ``kg_query``; the stage-1 hook lets the ``prism`` module's
  ``augment`` add expanded entities/relations to LightRAG's own search result.
* Registered ``kg`` modes run ``kg_query`` with stage 1 replaced by the mode's ``retrieve``; registered ``chunks``
  modes run ``naive_query`` with its vector search replaced. Either way LightRAG does truncation, context building,
  reranking, caching and the answer call, exactly as for its own modes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from .context import QueryContext
from .param import KG_STOCK_MODES, STOCK_MODES
from .patches import ACTIVE_HOOKS
from .result import Retrieval, ScoredItem
from .retrievers import MODE_MODULES, mode_module

PRISM_MODE = "prism"  # the mode whose augment() adds the perspectives to stock KG modes


SOURCE_FIELD = "source_id"


def _fields(item: ScoredItem, keep_sources: bool) -> dict[str, Any]:
    return item.data if keep_sources else {k: v for k, v in item.data.items() if k != SOURCE_FIELD}


def _entity_record(item: ScoredItem, keep_sources: bool = True) -> dict[str, Any]:
    return {**_fields(item, keep_sources), "entity_name": item.id, **item.annotation()}


def _relation_record(item: ScoredItem, keep_sources: bool = True) -> dict[str, Any]:
    src, tgt = item.data.get("src_id"), item.data.get("tgt_id")
    return {"rank": 0, "weight": 1.0, **_fields(item, keep_sources), "src_tgt": (src, tgt), **item.annotation()}


def _chunk_record(item: ScoredItem, source: str) -> dict[str, Any]:
    return {
        "content": item.data.get("content", ""), "file_path": item.data.get("file_path", "unknown_source"),
        "created_at": item.data.get("created_at"), "source_type": source, "chunk_id": item.id, **item.annotation(),
    }


def to_stock_search_result(retrieval: Retrieval, keep_sources: bool = True) -> dict[str, Any]:
    """A Retrieval in the shape of ``_perform_kg_search``'s result.

    ``keep_sources=False`` drops the entities' and relations' ``source_id``: LightRAG's chunk merge then adds no
    entity/relation chunks of its own and the mode's chunk order is what LightRAG truncates (``annotate`` puts the
    field back into ``aquery_data`` output)."""
    chunks = [_chunk_record(c, "vector") for c in retrieval.chunks]
    tracking = {c["chunk_id"]: {"source": "C", "frequency": 1, "order": i + 1} for i, c in enumerate(chunks)}
    return {
        "final_entities": [_entity_record(e, keep_sources) for e in retrieval.entities],
        "final_relations": [_relation_record(r, keep_sources) for r in retrieval.relations],
        "vector_chunks": chunks, "chunk_tracking": tracking, "query_embedding": None,
    }


class PrismHooks:
    """The hooks object ``patches`` calls while one PrismRAG query runs."""

    def __init__(self, ctx: QueryContext) -> None:
        self.ctx = ctx

    async def kg_search(self, original, arguments: dict[str, Any]) -> dict[str, Any]:
        ctx = self.ctx
        ctx.ll_keywords, ctx.hl_keywords = arguments["ll_keywords"], arguments["hl_keywords"]
        _bind_stock_search(ctx, original, arguments)
        if ctx.param.mode in KG_STOCK_MODES:  # stock mode with perspective knobs on
            return await mode_module(PRISM_MODE).augment(ctx, await ctx.stock_search())
        module = mode_module(ctx.param.mode)
        ctx.retrieval = await module.retrieve(ctx)
        return to_stock_search_result(ctx.retrieval, keep_sources=not getattr(module, "OWN_CHUNK_RANKING", False))

    async def vector_context(self, original, arguments: dict[str, Any]) -> list[dict]:
        ctx = self.ctx
        if ctx.param.mode not in MODE_MODULES:  # mix mode's vector branch inside a stock query
            return await original(arguments)
        _bind_stock_search(ctx, original, arguments)
        ctx.retrieval = await mode_module(ctx.param.mode).retrieve(ctx)
        return [_chunk_record(c, ctx.param.mode) for c in ctx.retrieval.chunks]


def _bind_stock_search(ctx: QueryContext, original, arguments: dict[str, Any]) -> None:
    """Give the mode LightRAG's own retrieval step for this query, with optional argument overrides."""

    async def stock_search(**overrides):
        return await original({**arguments, **overrides})

    ctx.stock_search = stock_search


@contextmanager
def active_hooks(hooks: PrismHooks | None):
    token = ACTIVE_HOOKS.set(hooks)
    try:
        yield
    finally:
        ACTIVE_HOOKS.reset(token)


def _restore_source(row: dict[str, Any], item: ScoredItem) -> None:
    if not row.get(SOURCE_FIELD) and item.data.get(SOURCE_FIELD):
        row[SOURCE_FIELD] = item.data[SOURCE_FIELD]


def annotate(raw_data: dict[str, Any], retrieval: Retrieval) -> dict[str, Any]:
    """Add each item's score, perspective and path to aquery_data output, and the mode's metadata (and the
    ``source_id`` a mode with ``OWN_CHUNK_RANKING`` withheld from LightRAG)."""
    data = raw_data.get("data") or {}
    entities = {e.id: e for e in retrieval.entities}
    relations = {tuple(sorted((r.data.get("src_id", ""), r.data.get("tgt_id", "")))): r for r in retrieval.relations}
    chunks = {c.id: c for c in retrieval.chunks}
    for row in data.get("entities", []):
        if row.get("entity_name") in entities:
            _restore_source(row, entities[row["entity_name"]])
            row.update(entities[row["entity_name"]].annotation())
    for row in data.get("relationships", []):
        key = tuple(sorted((row.get("src_id", ""), row.get("tgt_id", ""))))
        if key in relations:
            _restore_source(row, relations[key])
            row.update(relations[key].annotation())
    for row in data.get("chunks", []):
        if row.get("chunk_id") in chunks:
            row.update(chunks[row["chunk_id"]].annotation())
    return raw_data


def mode_kind(mode: str) -> str:
    return getattr(mode_module(mode), "KIND", "kg")


def reads_keywords(param) -> bool:
    """Whether a KG-path query reads LightRAG's ll/hl keywords: the stock modes do; a plugin mode says so with its
    ``reads_keywords`` (default yes)."""
    if param.mode in STOCK_MODES:
        return True
    check = getattr(mode_module(param.mode), "reads_keywords", None)
    return True if check is None else bool(check(param))
