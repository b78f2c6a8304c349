"""Keeping ``adelete_by_doc_id`` correct after PrismRAG's insert-time changes.

When a document is deleted, LightRAG rebuilds every entity/relation it shared with other documents by re-parsing
the *cached extraction answers* of the remaining chunks. Those answers know nothing about PrismRAG's
post-processing, so without this module a rebuild would

* drop the ``[Time: ts]`` prefixes (they are added after extraction), and
* look for merged-away names: after ``Acme Corp`` was merged into ``Acme Corporation``, a remaining chunk's
  cached answer still says ``Acme Corp``, the rebuild finds no record for ``Acme Corporation`` and keeps the
  deleted document's description, source ids and weights.

:func:`rebuild_hook` (called after ``_rebuild_from_extraction_result`` through a PrismRAG's seam, ``seam.py``)
re-applies the chunk's timestamp and renames entities through the alias map that every merge records
(the ``aliases`` record of the plugin state: merged-away name → canonical name, chains resolved). Inside
:func:`aliases_read_once` (``PrismRAG.adelete_by_doc_id`` enters it) the file is read once for all rebuilt chunks.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from ... import patches
from ...plugin_state import plugin_state, state_of_chunk_store
from ..pipeline import TIMESTAMP_FIELD
from ..timestamps.markers import prefix_description

ALIAS_DOCUMENT = "aliases"

# id(plugin state) → its alias map, for the operation (one delete) that entered aliases_read_once().
_read_aliases: ContextVar[dict[int, dict[str, str]] | None] = ContextVar("prism_read_aliases", default=None)


async def load_aliases(state) -> dict[str, str]:
    return await state.document(ALIAS_DOCUMENT).load({})


@contextmanager
def aliases_read_once() -> Iterator[None]:
    """Within this block each instance's alias map is read at most once (by the first rebuilt chunk)."""
    token = _read_aliases.set({})
    try:
        yield
    finally:
        _read_aliases.reset(token)


async def _aliases_for(text_chunks) -> dict[str, str]:
    state = state_of_chunk_store(text_chunks)
    if state is None or not state.ready:  # not a PrismRAG's storage, or one already finalized
        return {}
    read = _read_aliases.get()
    if read is None:  # a rebuild outside a delete (e.g. LightRAG's custom-KG rollback): read it now
        return await load_aliases(state)
    if id(state) not in read:
        read[id(state)] = await load_aliases(state)
    return read[id(state)]


def resolve(aliases: dict[str, str], name: str) -> str:
    seen = {name}
    while name in aliases and aliases[name] not in seen:
        name = aliases[name]
        seen.add(name)
    return name


async def add_aliases(rag, members: list[str], canonical: str) -> None:
    """Record ``member → canonical`` for every other member (idempotent; one atomic record write)."""

    def change(aliases: dict[str, str]) -> dict[str, str]:
        aliases.pop(canonical, None)  # a name that becomes canonical again is no longer an alias
        aliases.update({m: canonical for m in members if m != canonical})
        return {a: resolve(aliases, t) for a, t in aliases.items()}

    await plugin_state(rag).update(ALIAS_DOCUMENT, change, {})


def _rename_nodes(nodes: dict, aliases: dict[str, str], timestamp: str | None) -> dict:
    out: dict[str, list] = {}
    for name, records in nodes.items():
        new = resolve(aliases, name)
        for record in records:
            record["entity_name"] = new
            if timestamp and record.get("description"):
                record["description"] = prefix_description(record["description"], timestamp)
        out.setdefault(new, []).extend(records)
    return out


def _rename_edges(edges: dict, aliases: dict[str, str], timestamp: str | None) -> dict:
    out: dict[tuple, list] = {}
    for (src, tgt), records in edges.items():
        a, b = resolve(aliases, src), resolve(aliases, tgt)
        if a == b:
            continue  # the relation was inside a merged cluster (the merge dropped it as a self-loop)
        for record in records:
            record["src_id"], record["tgt_id"] = a, b
            if timestamp and record.get("description"):
                record["description"] = prefix_description(record["description"], timestamp)
        key = (a, b) if (b, a) not in out else (b, a)
        out.setdefault(key, []).extend(records)
    return out


async def rebuild_hook(storage, chunk_id: str, chunk_data: dict, nodes: dict, edges: dict) -> tuple[dict, dict]:
    timestamp = chunk_data.get(TIMESTAMP_FIELD)
    aliases = await _aliases_for(storage)
    if not timestamp and not aliases:
        return nodes, edges
    return _rename_nodes(nodes, aliases, timestamp), _rename_edges(edges, aliases, timestamp)

