"""Document ids by content hash and by file path, for the JSON doc-status store's lookups (``doc_status.py``).

LightRAG 1.5.7's ``JsonDocStatusStorage`` answers ``get_doc_by_content_hash``, ``resolve_doc_source_strict``,
``get_doc_by_file_basename`` and ``get_doc_by_file_path`` by scanning every document ("JSON has no content_hash
index"), and its pipeline asks about seven of them per document. At 9,000 documents that was ~10 s of every batch of
500 (cProfile), the part of an insert that grew with the index. PrismRAG's doc-status store keeps a
:class:`DocStatusIndex` (content hash -> ids, file path -> ids) and the lookups read candidates from it; each
candidate is checked against the row itself, and the answer is the one the scan gives.

The index follows the writes it can see: ``upsert``, ``update_doc_status_fields`` and ``delete`` name their ids,
which are read again from the rows on every lookup while the write runs and once after it; ``drop`` and
``repair_source_conflict``, a load of the file (initialization, the reload of a sanitised file), or a new data dict
make it rebuild on the next lookup. The index is shared by the instances of a process that share the data
(:func:`index_of`). In LightRAG's multi-process mode the data is a dict shared with other workers, whose writes this
process does not see: the lookups scan there, as LightRAG does.
"""

from __future__ import annotations

from collections import Counter, defaultdict


class DocStatusIndex:
    """Document ids by content hash and by file path, for one storage's ``_data`` dict."""

    def __init__(self) -> None:
        self.data_id: int | None = None  # id() of the dict indexed (None: rebuild on the next lookup)
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
        if self.data_id != id(data):
            self.by_hash.clear(), self.by_path.clear(), self.keys.clear(), self.dirty.clear()
            for doc_id, row in data.items():
                self._put(doc_id, row)
            self.data_id = id(data)
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
    kept: a load invalidates the index."""
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
