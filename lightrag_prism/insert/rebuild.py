"""Keeping ``adelete_by_doc_id`` correct after PrismRAG's insert-time changes.

When a document is deleted, LightRAG rebuilds every entity/relation it shared with other documents by re-parsing
the *cached extraction answers* of the remaining chunks. Those answers know nothing about PrismRAG's
post-processing, so without this module a rebuild would

* drop the ``[Time: ts]`` prefixes (they are added after extraction), and
* look for merged-away names: after ``Acme Corp`` was merged into ``Acme Corporation``, a remaining chunk's
  cached answer still says ``Acme Corp``, the rebuild finds no record for ``Acme Corporation`` and keeps the
  deleted document's description, source ids and weights.

:func:`rebuild_hook` (installed around ``_rebuild_from_extraction_result`` by ``patches/insert_hooks.py``)
re-applies the chunk's timestamp and renames entities through the alias map that every merge records
(``prism_entity_aliases.json``: merged-away name → canonical name, chains resolved). Inside
:func:`aliases_read_once` (``PrismRAG.adelete_by_doc_id`` enters it) the file is read once for all rebuilt chunks.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator

from .. import patches
from .jsonfile import read_json, write_json_atomic
from .pipeline import TIMESTAMP_FIELD
from .timestamps import prefix_description

ALIAS_FILE = "prism_entity_aliases.json"

# Storage directory → its alias map, for the operation (one delete) that entered aliases_read_once().
_read_aliases: ContextVar[dict[str, dict[str, str]] | None] = ContextVar("prism_read_aliases", default=None)


def load_aliases(directory: str) -> dict[str, str]:
    return read_json(Path(directory) / ALIAS_FILE, {})


@contextmanager
def aliases_read_once() -> Iterator[None]:
    """Within this block each storage directory's alias file is read at most once (by the first rebuilt chunk)."""
    token = _read_aliases.set({})
    try:
        yield
    finally:
        _read_aliases.reset(token)


def _aliases_for(directory: str) -> dict[str, str]:
    read = _read_aliases.get()
    if read is None:  # a rebuild outside a delete (e.g. LightRAG's custom-KG rollback): read it now
        return load_aliases(directory)
    if directory not in read:
        read[directory] = load_aliases(directory)
    return read[directory]


def resolve(aliases: dict[str, str], name: str) -> str:
    seen = {name}
    while name in aliases and aliases[name] not in seen:
        name = aliases[name]
        seen.add(name)
    return name


def add_aliases(directory: str, members: list[str], canonical: str) -> None:
    """Record ``member → canonical`` for every other member (idempotent; atomic write)."""
    aliases = load_aliases(directory)
    aliases.pop(canonical, None)  # a name that becomes canonical again is no longer an alias
    aliases.update({m: canonical for m in members if m != canonical})
    aliases = {a: resolve(aliases, t) for a, t in aliases.items()}
    write_json_atomic(Path(directory) / ALIAS_FILE, aliases)


def _storage_dir(storage) -> str:
    working_dir = storage.global_config["working_dir"]
    workspace = getattr(storage, "workspace", "") or ""
    return os.path.join(working_dir, workspace) if workspace else working_dir


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
    aliases = _aliases_for(_storage_dir(storage))
    if not timestamp and not aliases:
        return nodes, edges
    return _rename_nodes(nodes, aliases, timestamp), _rename_edges(edges, aliases, timestamp)


patches.insert_hooks.register_rebuild_hook(rebuild_hook)
