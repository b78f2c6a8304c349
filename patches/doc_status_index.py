"""Indexed lookups for LightRAG's JSON doc-status store: by content hash and by file path.

LightRAG 1.5.7's ``JsonDocStatusStorage`` answers ``get_doc_by_content_hash``, ``resolve_doc_source_strict``,
``get_doc_by_file_basename`` and ``get_doc_by_file_path`` by scanning every document ("JSON has no content_hash
index"), and its pipeline asks about seven of them per document. At 9,000 documents that was ~10 s of every batch of
500 (cProfile), the part of an insert that grew with the index. Here each storage instance keeps a
:class:`DocStatusIndex` (content hash -> ids, file path -> ids) and the lookups read candidates from it; each
candidate is checked against the row itself, and the answer is the one the scan gives:

* ``get_doc_by_content_hash``: the same filters, the earliest by ``(created_at, id)``, as LightRAG;
* the path lookups depend on dict order when several rows share a path; then they run LightRAG's scan.

The index follows the writes it can see: ``upsert``, ``update_doc_status_fields`` and ``delete`` name their ids,
which are read again from the rows on every lookup while the write runs and once after it; ``drop`` and
``repair_source_conflict``, ``initialize``, any load of a doc-status file (initialization, the reload of a sanitised
file), or a new data dict make it rebuild on the next lookup. The index is shared by the instances of a process
that share the data (:func:`index_of`). In LightRAG's multi-process mode the data is a dict shared with
other workers, whose writes this process does not see: the lookups scan there, as LightRAG does.

Private coupling: the four lookup methods, ``initialize`` and ``json_doc_status_impl.load_json`` (replaced at import, originals kept
as ``__wrapped__``), the storage's ``_data`` and ``_storage_lock``.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict

from .private import register_symbols, wrap_once

_SYMBOLS = [
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_content_hash", 3),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.resolve_doc_source_strict", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_file_basename", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_file_path", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.initialize", 1),
]
register_symbols(*_SYMBOLS)

_LOADS = [0]  # doc-status file loads in this process: any of them may have replaced rows behind the index's back


class DocStatusIndex:
    """Document ids by content hash and by file path, for one storage's ``_data`` dict."""

    def __init__(self) -> None:
        self.data_id: int | None = None  # id() of the dict indexed (None: rebuild on the next lookup)
        self.loads = -1
        self.by_hash: dict[str, set[str]] = defaultdict(set)
        self.by_path: dict[str, set[str]] = defaultdict(set)
        self.keys: dict[str, tuple] = {}  # doc id -> (content hash, file path) it is indexed under
        self.dirty: set[str] = set()  # ids to read again once
        self.writing: Counter = Counter()  # ids of writes in progress: read again on every lookup meanwhile
        self.rebuilding = 0  # writes in progress that do not name their ids (drop, conflict repair)

    def invalidate(self) -> None:
        self.data_id = None

    def current(self, data: dict) -> "DocStatusIndex | None":
        """The index brought up to date with ``data``, or None when the caller must scan."""
        if self.rebuilding or type(data) is not dict:
            return None
        if self.data_id != id(data) or self.loads != _LOADS[0]:
            self.by_hash.clear(), self.by_path.clear(), self.keys.clear(), self.dirty.clear()
            for doc_id, row in data.items():
                self._put(doc_id, row)
            self.data_id, self.loads = id(data), _LOADS[0]
            return self
        for doc_id in (*self.dirty, *self.writing):
            self._drop(doc_id)
            if doc_id in data:
                self._put(doc_id, data[doc_id])
        self.dirty.clear()
        return self

    def _put(self, doc_id: str, row) -> None:
        if not isinstance(row, dict):
            return
        content_hash, path = row.get("content_hash"), row.get("file_path")
        self.keys[doc_id] = (content_hash, path)
        if content_hash:
            self.by_hash[content_hash].add(doc_id)
        if path:
            self.by_path[path].add(doc_id)

    def _drop(self, doc_id: str) -> None:
        keys = self.keys.pop(doc_id, None)
        if keys is None:
            return
        for table, key in zip((self.by_hash, self.by_path), keys):
            ids = table.get(key)
            if ids is not None:
                ids.discard(doc_id)
                if not ids:
                    del table[key]


_INDEXES: dict[tuple[str, str], DocStatusIndex] = {}


def index_of(storage) -> DocStatusIndex:
    """The index of the storage's data: one per (workspace, namespace), the key under which LightRAG shares one
    data dict between the instances of a process, so each sees the others' writes. No reference to the dict is
    kept: a new dict comes from a load, which counts (``_LOADS``)."""
    return _INDEXES.setdefault((storage.workspace, storage.namespace), DocStatusIndex())


def note_write(storage, ids) -> "_Writing":
    """Context of a write that changes the rows ``ids`` (None: rows it does not name)."""
    return _Writing(index_of(storage), None if ids is None else list(ids))


class _Writing:
    def __init__(self, index: DocStatusIndex, ids: list[str] | None) -> None:
        self.index, self.ids = index, ids

    def __enter__(self) -> None:
        if self.ids is None:
            self.index.rebuilding += 1
            self.index.invalidate()
        else:
            self.index.writing.update(self.ids)

    def __exit__(self, *exc) -> None:
        if self.ids is None:
            self.index.rebuilding -= 1
            self.index.invalidate()
            return
        self.index.writing.subtract(self.ids)
        for doc_id in self.ids:
            if self.index.writing[doc_id] <= 0:
                del self.index.writing[doc_id]
        self.index.dirty.update(self.ids)


def _in_data_order(storage, rows: list[tuple[str, dict]], n: int) -> list[tuple[str, dict]]:
    """The first ``n`` of ``rows`` in ``_data``'s order (what LightRAG's scan meets first); O(store) only when
    more than ``n`` rows share the key."""
    if len(rows) <= n:
        return rows
    order = {doc_id: i for i, doc_id in enumerate(storage._data)}
    return sorted(rows, key=lambda item: order[item[0]])[:n]


def _by_content_hash(original):
    async def get_doc_by_content_hash(self, content_hash, *, exclude_doc_id=None):
        if not content_hash or self._storage_lock is None:
            return await original(self, content_hash, exclude_doc_id=exclude_doc_id)
        async with self._storage_lock:
            index = index_of(self).current(self._data)
            if index is not None:
                best = None
                for doc_id in index.by_hash.get(content_hash, ()):
                    row = self._data.get(doc_id)
                    if (doc_id == exclude_doc_id or self._row_points_at_as_duplicate(row, exclude_doc_id)
                            or not isinstance(row, dict) or row.get("content_hash") != content_hash):
                        continue
                    key = self._row_sort_key(doc_id, row)
                    if best is None or key < best[0]:
                        best = (key, doc_id, row)
                return None if best is None else (best[1], copy.deepcopy(best[2]))
        return await original(self, content_hash, exclude_doc_id=exclude_doc_id)

    return get_doc_by_content_hash


def _path_rows(storage, path: str, primary_only: bool) -> list[tuple[str, dict]] | None:
    """(id, row) of the rows with ``file_path == path`` (not duplicate markers, if ``primary_only``), in no order;
    None when the index cannot answer. Called under the storage lock."""
    index = index_of(storage).current(storage._data)
    if index is None:
        return None
    rows = ((doc_id, storage._data.get(doc_id)) for doc_id in index.by_path.get(path, ()))
    return [(doc_id, row) for doc_id, row in rows if isinstance(row, dict) and row.get("file_path") == path
            and not (primary_only and storage._is_duplicate_row(row))]


def _path_lookup(original, primary_only: bool, first: int, answer, skip=()):
    """A path lookup: ``answer(self, rows)`` of the first ``first`` matching rows in ``_data``'s order, as
    LightRAG's scan would find them; the scan itself when the index cannot answer."""
    async def lookup(self, path):
        if not path or path in skip or self._storage_lock is None:
            return await original(self, path)
        async with self._storage_lock:
            rows = _path_rows(self, path, primary_only)
            if rows is not None:
                rows = [(doc_id, copy.deepcopy(row)) for doc_id, row in _in_data_order(self, rows, first)]
        return await original(self, path) if rows is None else answer(self, rows)

    return lookup


def _by_basename(original):
    return _path_lookup(original, primary_only=True, first=1, skip=("unknown_source",),
                        answer=lambda self, rows: rows[0] if rows else None)


def _by_file_path(original):
    return _path_lookup(original, primary_only=False, first=1, answer=lambda self, rows: rows[0][1] if rows else None)


def _resolve_source(original):
    from lightrag.base import SourceAbsent, SourceConflict, SourceUnique

    def answer(self, rows):
        if not rows:
            return SourceAbsent()
        if len(rows) == 1:
            doc_id, row = rows[0]
            return SourceUnique(doc_id=doc_id, doc=self._scheduling_record_from_raw(doc_id, row))
        # LightRAG stops at the second candidate: its sample is the first two in dict order
        return SourceConflict(candidate_count=None, sample_doc_ids=tuple(sorted(doc_id for doc_id, _ in rows)))

    return _path_lookup(original, primary_only=True, first=2, skip=("unknown_source",), answer=answer)


def _initialize(original):
    async def initialize(self):
        try:
            return await original(self)
        finally:  # its load and its update of the shared dict are apart (an await between)
            index_of(self).invalidate()

    return initialize


def _counting_loader(original):
    def load_json(file_name):
        _LOADS[0] += 1
        return original(file_name)

    return load_json


_REPLACED = {
    "get_doc_by_content_hash": _by_content_hash,
    "resolve_doc_source_strict": _resolve_source,
    "get_doc_by_file_basename": _by_basename,
    "get_doc_by_file_path": _by_file_path,
    "initialize": _initialize,
}


def install() -> None:
    from lightrag.kg import json_doc_status_impl

    for name, make in _REPLACED.items():
        wrap_once(json_doc_status_impl.JsonDocStatusStorage, name, make)
    wrap_once(json_doc_status_impl, "load_json", _counting_loader)


install()
