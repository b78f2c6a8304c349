"""Incremental persistence for LightRAG's whole-file stores: the changes of each flush appended to a journal.

Why: ``NanoVectorDBStorage``, ``NetworkXStorage`` and ``JsonKVStorage`` rewrite their whole file on every flush.
At 9,000 passages the vector stores, the GraphML and the plugin's vector cache are about 700 MB, rewritten once
per flush round, so a small insert into a big index costs what the index costs, not what its passages cost.

How: a flush of a journaled file appends, as one JSON line, what changed since the file's content on disk (the
base file plus its journal), to ``<file>.prism-journal``. When the journal reaches half the base file's size (and
at ``finalize_storages``) the file is compacted: rewritten whole, as LightRAG writes it, and the journal removed.
Compaction happens after the base grew by half, so the bytes written stay proportional to what changed.

* **Loading** a file replays its journal on top of it (PrismRAG's storages, ``lightrag_prism/storages/``: at start
  and on the reload after another process wrote).
* **A stale journal** is never replayed: its first line names the base file it extends (inode, size, mtime), and
  any whole rewrite (a compaction, or a writer that does not journal) replaces the base.
* **A torn last line** (a crash during an append: that flush never returned, so nothing was acknowledged) is
  dropped when the journal is read, and cut off before the next append.
* **What changed** is found by comparing with the content on disk, kept per file (:class:`FileState`): vector rows
  by identity (NanoVectorDB replaces a row's dict on upsert), KV values by identity (``JsonKVStorage`` stores the
  dicts given to ``upsert`` and hands out deep copies, so a changed value is a new object). Where that costs a pass
  over the whole store per flush (the vector stores, the KV stores), or where LightRAG changes values in place (the
  doc-status store), the keys each write names are tracked instead (``touch``), and a flush looks at those alone.
  The graph is always tracked (networkx changes attributes in place, and a copy of them all to compare with cost
  more memory than the graph's own strings): a flush writes the nodes and edges touched, and one that does not
  know what changed rewrites the file.
* **A value JSON cannot hold as is** (a lone surrogate) makes that flush a whole rewrite by LightRAG's own writer,
  which sanitises it.

Only files a PrismRAG instance registers are journaled (``lightrag_prism/storages/``). In LightRAG's
multi-process mode (``lightrag-prism serve --workers N``) those are the graph and the vector stores, which each
process holds in its own memory: the writer appends, and the others **catch up** (:func:`catch_up`) by applying
what was appended since they last looked, instead of reading the whole file again (7 s for the GraphML and 7 s for
the vector stores of the 9,000-passage bench index, each time another worker indexed a text). The JSON stores are
one dict in LightRAG's manager there: each process appends the keys it wrote, without copying the dict
(:class:`SharedKVKind`).
A working dir is complete without its journals only after ``finalize_storages``; a process that crashed leaves
journals the next PrismRAG start replays (stock LightRAG would not: open it with lightrag_prism once first).
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import orjson

JOURNAL_SUFFIX = ".prism-journal"
COMPACT_RATIO = 0.5  # compact when the journal reaches this fraction of the base file
MIN_COMPACT_BYTES = 1 << 20  # ... and at least this size: tiny stores are cheap to rewrite anyway
FORMAT = 1


def journal_path(file_name: str) -> str:
    return file_name + JOURNAL_SUFFIX


def base_identity(file_name: str) -> list[int] | None:
    """What names one version of the base file: a whole rewrite (``os.replace``) changes it."""
    try:
        stat = os.stat(file_name)
    except FileNotFoundError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def read_journal(file_name: str) -> list[dict]:
    """The change records of ``file_name``'s journal, oldest first; ``[]`` if it has none or it is stale (then
    removed). A torn last line is dropped and cut off the file."""
    path = journal_path(file_name)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return []
    lines = raw.split(b"\n")
    complete, torn = lines[:-1], lines[-1]
    try:
        header = orjson.loads(complete[0]) if complete else None
    except orjson.JSONDecodeError:
        header = None
    if not header or header.get("prism_journal") != FORMAT or header.get("base") != base_identity(file_name):
        remove_journal(file_name)
        return []
    if torn:
        with open(path, "r+b") as handle:
            handle.truncate(len(raw) - len(torn))
    return [orjson.loads(line) for line in complete[1:]]


def append_record(file_name: str, record: dict) -> tuple[int, int]:
    """Append one change record (creating the journal against the current base); returns the journal's size before
    and after."""
    path = journal_path(file_name)
    line = orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
    if not os.path.exists(path):
        header = orjson.dumps({"prism_journal": FORMAT, "base": base_identity(file_name)}) + b"\n"
        line = header + line
    with open(path, "ab") as handle:
        start = handle.seek(0, os.SEEK_END)
        handle.write(line)
        return start, handle.tell()


def remove_journal(file_name: str) -> None:
    try:
        os.remove(journal_path(file_name))
    except FileNotFoundError:
        pass


def should_compact(file_name: str, journal_bytes: int) -> bool:
    try:
        base = os.path.getsize(file_name)
    except FileNotFoundError:
        return True
    return journal_bytes >= max(MIN_COMPACT_BYTES, COMPACT_RATIO * base)


# --- what changed, and replaying it: one small class per kind of store ---------------------------------------------

class KVKind:
    """A JSON KV store's dict; values compared by identity (for stores whose values are replaced, not mutated).
    Not tracked: every flush passes over every key."""

    tracked = False
    tracked_from_load = False

    @staticmethod
    def content(data: dict) -> dict:
        return dict(data)

    @staticmethod
    def changes(saved: dict, data: dict, touched: set | None = None) -> dict | None:
        upserts = {key: value for key, value in data.items() if saved.get(key, _MISSING) is not value}
        deletes = [key for key in saved if key not in data]
        return {"u": upserts, "d": deletes} if upserts or deletes else None

    @staticmethod
    def apply(data: dict, record: dict) -> None:
        for key in record.get("d", ()):
            data.pop(key, None)
        data.update(record.get("u", {}))

    advance = apply


class TrackedKVKind(KVKind):
    """A ``JsonKVStorage`` dict, tracked: ``touched`` holds the keys its writes named since the last flush
    (``lightrag_prism/storages/``), and those rows are written as they are now. The identity pass of
    :class:`KVKind` cost 5-10 ms per flush of a 20,000-key store (the entity and relation chunk lists at 3,000
    passages), every store at every flush. Tracking starts at the first flush after a load, not at the load:
    LightRAG's legacy cache migration writes the file straight after loading it, through no write the hooks see,
    so that first flush compares everything. So does any flush after a write whose keys are unknown (``drop``)."""

    tracked = True

    @staticmethod
    def changes(saved: dict, data: dict, touched: set | None = None) -> dict | None:
        if touched is None:
            return KVKind.changes(saved, data)
        upserts = {key: data[key] for key in touched if key in data}
        deletes = [key for key in touched if key not in data and key in saved]
        return {"u": upserts, "d": deletes} if upserts or deletes else None


class DocStatusKind(TrackedKVKind):
    """The doc-status store's dict. LightRAG may change a stored row in place before upserting it again, so
    identity says nothing; tracked from the load on (no write the hooks miss follows a load). Without tracking
    (after a write whose ids are unknown) every row that is a new object is written, as for :class:`KVKind`."""

    tracked_from_load = True


class SharedKVKind(TrackedKVKind):
    """A JSON store's dict shared by processes through LightRAG's manager (its multi-process mode): every process
    reads and writes the one dict, so a whole rewrite from it is complete, and there is nothing to catch up with.
    What this process's writes named is appended with the values the dict holds at the flush (another process may
    have written the key since: the journal then holds the newer value, as the dict does). No copy of the content
    is kept (a full read of the dict goes through the manager: 288 MB for the vector cache of the 9,000-passage
    bench index); a flush that does not know what changed rewrites the file whole."""

    shared = True
    tracked_from_load = True

    @staticmethod
    def content(data) -> None:
        return SHARED

    @staticmethod
    def changes(saved, data, touched: set | None = None) -> dict | None:
        upserts, deletes = {}, []
        for key in touched:
            value = data.get(key, _ABSENT)  # one call to the manager per key
            if isinstance(value, str) and value == _ABSENT:
                deletes.append(key)
            else:
                upserts[key] = value
        return {"u": upserts, "d": deletes} if upserts or deletes else None

    @staticmethod
    def advance(saved, record: dict) -> None:
        pass


class RowsKind:
    """A NanoVectorDB storage dict (``data`` rows, ``matrix``); rows compared by identity, since NanoVectorDB
    replaces a row's dict on upsert. A record: ``{"u": [[row, base64 float32 vector]], "d": [id]}``.
    Tracked: ``touched`` holds the ids upserted or deleted since the last flush (``lightrag_prism/storages/``
    hooks ``NanoVectorDB.upsert``/``delete``, the only ways LightRAG changes the rows), so a flush looks at those."""

    tracked = True
    tracked_from_load = True

    def __init__(self, id_field: str, row_index: Callable[[], dict | None] | None = None):
        self.id_field = id_field
        self.row_index = row_index  # () -> the store's current id -> row index, or None (see with_index)

    def with_index(self, row_index: Callable[[], dict | None] | None) -> "RowsKind":
        """This kind for one store whose ``row_index()`` gives its current id -> row index (None when it has none
        current): a flush then finds the touched rows through it instead of a pass over every row (about 5 ms a
        store at 60,000 rows, several flushes per document deleted)."""
        return RowsKind(self.id_field, row_index)

    def content(self, storage: dict) -> dict:
        return {row[self.id_field]: row for row in storage["data"]}

    def changes(self, saved: dict, storage: dict, touched: set | None = None) -> dict | None:
        rows, matrix, id_field = storage["data"], storage["matrix"], self.id_field
        if touched is None:  # compare every row
            candidates = enumerate(rows)
            present = {row[id_field] for row in rows}
            deletes = [key for key in saved if key not in present]
        elif not touched:
            return None
        else:  # positions of the touched ids still present: through the index, or one pass over the ids
            index = self.row_index() if self.row_index is not None else None
            if index is not None:
                candidates = sorted((index[key], rows[index[key]]) for key in touched if key in index)
            else:
                candidates = [(i, rows[i]) for i, row_id in enumerate(row[id_field] for row in rows)
                              if row_id in touched]
            present = {row[id_field] for _, row in candidates}
            deletes = [key for key in touched if key in saved and key not in present]
        upserts = [[row, _b64(matrix[i])] for i, row in candidates if saved.get(row[id_field]) is not row]
        return {"u": upserts, "d": deletes} if upserts or deletes else None

    def advance(self, saved: dict, record: dict) -> None:
        for key in record["d"]:
            saved.pop(key, None)
        for row, _ in record["u"]:
            saved[row[self.id_field]] = row

    def apply(self, storage: dict, record: dict) -> None:
        """Replay in place. Vectors are normalised as NanoVectorDB normalises every row it loads, so a replayed
        row equals the row a whole rewrite would load, to the bit."""
        id_field = self.id_field
        deleted = set(record.get("d", ()))
        if deleted:
            keep = [i for i, row in enumerate(storage["data"]) if row[id_field] not in deleted]
            storage["data"] = [storage["data"][i] for i in keep]
            storage["matrix"] = storage["matrix"][keep]
        upserts = record.get("u", ())
        if not upserts:
            return
        vectors = unit_rows(np.stack([np.frombuffer(base64.b64decode(v), dtype=np.float32) for _, v in upserts]))
        position = {row[id_field]: i for i, row in enumerate(storage["data"])}
        new_rows: dict = {}  # id -> index into upserts, first-seen order; a later upsert of an id wins
        for j, (row, _) in enumerate(upserts):
            i = position.get(row[id_field])
            if i is None:
                new_rows[row[id_field]] = j
            else:
                storage["data"][i] = row
                storage["matrix"][i] = vectors[j]
        if new_rows:
            storage["data"].extend(upserts[j][0] for j in new_rows.values())
            storage["matrix"] = np.vstack([storage["matrix"].reshape(-1, vectors.shape[1]),
                                           vectors[list(new_rows.values())]])


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """NanoVectorDB's ``normalize`` (the same expression, so the same bits)."""
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


class GraphKind:
    """An undirected networkx graph. A record: ``{"nu": [[node, attrs]], "nd": [node], "eu": [[u, v, attrs]],
    "ed": [[u, v]]}``. Tracked: ``touched`` holds :func:`node_touch` / :func:`edge_touch` keys of what
    ``NetworkXStorage``'s upserts and removals changed since the last flush (``lightrag_prism/storages/``), and a
    flush writes those nodes and edges as they are now. The content noted is the node and edge keys only (what a
    removal must know was on disk): a copy of every attribute dict, to compare touched ones by value, was 40 MB at
    9,239 passages. A flush that does not know what changed rewrites the file whole."""

    tracked = True
    tracked_from_load = True
    keys_only = True  # no values to compare: a flush of unknown changes is a whole rewrite

    @staticmethod
    def content(graph) -> tuple[set, set]:
        return set(graph.nodes), {edge_key(u, v) for u, v in graph.edges}

    @staticmethod
    def changes(saved: tuple[set, set], graph, touched: set) -> dict | None:
        saved_nodes, saved_edges = saved
        node_keys = [key[1] for key in touched if key[0] == "n"]
        edge_keys = [key[1:] for key in touched if key[0] == "e"]  # a node's removal touches its edges too
        node_upserts = [[node, graph.nodes[node]] for node in node_keys if node in graph]
        node_deletes = [node for node in node_keys if node in saved_nodes and node not in graph]
        edge_upserts = [[u, v, graph.edges[u, v]] for u, v in edge_keys if graph.has_edge(u, v)]
        edge_deletes = [list(key) for key in edge_keys if key in saved_edges and not graph.has_edge(*key)]
        if not (node_upserts or node_deletes or edge_upserts or edge_deletes):
            return None
        return {"nu": node_upserts, "nd": node_deletes, "eu": edge_upserts, "ed": edge_deletes}

    @staticmethod
    def advance(saved: tuple[set, set], record: dict) -> None:
        saved_nodes, saved_edges = saved
        gone = set(record["nd"])
        saved_nodes.difference_update(gone)
        if gone:  # removing a node removes its edges
            saved_edges.difference_update([key for key in saved_edges if key[0] in gone or key[1] in gone])
        saved_edges.difference_update(edge_key(u, v) for u, v in record["ed"])
        saved_nodes.update(node for node, _ in record["nu"])
        saved_edges.update(edge_key(u, v) for u, v, _ in record["eu"])

    @staticmethod
    def apply(graph, record: dict) -> None:
        graph.remove_nodes_from(record.get("nd", ()))
        graph.remove_edges_from([tuple(edge) for edge in record.get("ed", ())])
        for node, attrs in record.get("nu", ()):
            if node in graph:
                graph.nodes[node].clear()
            graph.add_node(node, **attrs)
        for u, v, attrs in record.get("eu", ()):
            if graph.has_edge(u, v):
                graph.edges[u, v].clear()
            graph.add_edge(u, v, **attrs)


def edge_key(u, v) -> tuple:
    return (u, v) if u <= v else (v, u)


def node_touch(node) -> tuple:
    return ("n", node)


def edge_touch(u, v) -> tuple:
    return ("e", *edge_key(u, v))


def _b64(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype=np.float32).tobytes()).decode()


_MISSING = object()
SHARED = "shared"  # the saved content of a SharedKVKind store: the manager's dict itself, never copied
_ABSENT = "\0lightrag_prism: absent"  # a default that crosses the manager as itself (an object() arrives as a copy)


# --- per-file state -----------------------------------------------------------------------------------------------

@dataclass
class FileState:
    """One journaled file: its content on disk as this process last read or wrote it (``saved``, in the form of
    its kind's ``content``), and how to rewrite it whole from the last content flushed (``compact``)."""

    file_name: str
    saved: Any = None  # None until read or written through this state: the first flush then rewrites the file
    journal_bytes: int = 0
    base: list[int] | None = None  # identity of the base file the journal extends
    compact: Callable[[], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Keys changed since ``saved`` was noted, for a tracked kind (None: unknown, the next flush compares all).
    touched: set | None = None
    # Keys a write in progress is changing: every flush meanwhile looks at them (see :func:`pinned`).
    pinned: dict = field(default_factory=dict)
    touch_lock: threading.Lock = field(default_factory=threading.Lock)
    appends: int = 0
    rewrites: int = 0
    # Other live processes hold this file too (LightRAG's multi-process mode): they append, this one catches up.
    across_processes: bool = False
    # The async lock the file's storage holds around its flushes (LightRAG's namespace lock, shared by processes):
    # a compaction at finalize_storages holds it too. A callable, as the lock exists once the storage initialized.
    guard: Callable[[], Any] | None = None
    # The store's content is one dict every process shares (SharedKVKind): never copied into ``saved``.
    shared_content: bool = False
    catch_ups: int = 0  # times this process applied what another appended
    reloads: int = 0  # times it read the file whole instead (the base file was replaced)

    def note_saved(self, kind, obj, loaded: bool = False) -> None:
        """``obj`` is now the file's content (``loaded``: as read from it): nothing is touched since, if the kind
        tracks from there."""
        self.saved = SHARED if self.shared_content else kind.content(obj)
        with self.touch_lock:
            self.touched = set() if kind.tracked and (kind.tracked_from_load or not loaded) else None

    def take_touched(self, kind) -> set | None:
        """The keys a flush of ``kind`` must look at (None: all), tracking afresh from here if it is tracked."""
        with self.touch_lock:
            touched = self.touched
            if not kind.tracked:
                return None
            self.touched = set()
            return None if touched is None else touched | set(self.pinned)

    def give_back(self, touched: set | None) -> None:
        """A flush that took ``touched`` did not record it: the next one must look at those keys again."""
        with self.touch_lock:
            self.touched = None if touched is None or self.touched is None else self.touched | touched


_FILES: dict[str, FileState] = {}
_FILES_LOCK = threading.Lock()


def register(file_name: str) -> FileState:
    """Journal ``file_name`` from now on (idempotent)."""
    key = os.path.abspath(file_name)
    with _FILES_LOCK:
        return _FILES.setdefault(key, FileState(key))


def registered(file_name: str) -> FileState | None:
    return _FILES.get(os.path.abspath(file_name))


def unregister(file_name: str) -> None:
    with _FILES_LOCK:
        _FILES.pop(os.path.abspath(file_name), None)


def touch(file_name: str, keys) -> None:
    """Note ``keys`` of a tracked store as changed (the storage hooks call it after each mutation)."""
    state = registered(file_name)
    if state is not None:
        with state.touch_lock:
            if state.touched is not None:
                state.touched.update(keys)


@contextlib.contextmanager
def pinned(file_name: str, keys: list):
    """Around a write that changes ``keys`` and flushes before it returns (the doc-status store persists every
    upsert at once): every flush during it looks at those keys, whether it runs before or after the change, and
    so does the next one after it."""
    state = registered(file_name)
    if state is None:
        yield
        return
    with state.touch_lock:
        for key in keys:
            state.pinned[key] = state.pinned.get(key, 0) + 1
    try:
        yield
    finally:
        with state.touch_lock:
            for key in keys:
                state.pinned[key] -= 1
                if not state.pinned[key]:
                    del state.pinned[key]
            if state.touched is not None:
                state.touched.update(keys)


def untrack(file_name: str) -> None:
    """A write changed keys the hooks cannot name: the next flush compares everything."""
    state = registered(file_name)
    if state is not None:
        with state.touch_lock:
            state.touched = None


def replay(file_name: str, kind, obj) -> Any:
    """After loading ``file_name`` into ``obj``: apply its journal, and note the content if it is journaled."""
    for record in read_journal(file_name):
        kind.apply(obj, record)
    state = registered(file_name)
    if state is not None:
        adopt(state, kind, obj)
    return obj


def adopt(state: FileState, kind, obj) -> None:
    """Note ``obj`` (just loaded from the file and its journal) as the file's content on disk."""
    with state.lock:
        state.note_saved(kind, obj, loaded=True)
        state.base = base_identity(state.file_name)
        state.journal_bytes = _size(journal_path(state.file_name))


def note_reloaded(state: FileState) -> None:
    """This process read the file whole again into a new object, after another process replaced it: a compaction
    would rewrite the object of its last flush, which is gone, so none until it flushes again."""
    with state.lock:
        state.compact = None
        state.reloads += 1


def catch_up(state: FileState, kind, obj) -> list[dict] | None:
    """Another process appended to the journal (LightRAG's multi-process mode): apply to ``obj`` the records
    appended since this process last read or wrote the file, and return them. None when that cannot be done: the
    base file was replaced (a compaction, a whole rewrite) or the journal is not the one read before; the caller
    then loads the file whole. A last line still being written is left for the next call (never cut off here: the
    writer may be another live process)."""
    with state.lock:
        if state.saved is None or state.base is None or state.base != base_identity(state.file_name):
            return None
        try:
            with open(journal_path(state.file_name), "rb") as handle:
                if os.fstat(handle.fileno()).st_size < state.journal_bytes:  # not the journal read before
                    return None
                handle.seek(state.journal_bytes)
                raw = handle.read()
        except FileNotFoundError:
            return [] if state.journal_bytes == 0 else None
        end = raw.rfind(b"\n") + 1
        lines = raw[:end].split(b"\n")[:-1]
        try:
            if state.journal_bytes == 0 and lines:  # a journal begun since: it must extend the base read
                header = orjson.loads(lines.pop(0))
                if header.get("prism_journal") != FORMAT or header.get("base") != state.base:
                    return None
            records = [orjson.loads(line) for line in lines]
        except orjson.JSONDecodeError:
            return None
        for record in records:
            kind.apply(obj, record)
            kind.advance(state.saved, record)
        state.journal_bytes += end
        state.catch_ups += 1
        return records


def flush(state: FileState, kind, obj, whole: Callable[[], None]) -> None:
    """Persist ``obj`` to ``state``'s file: append what changed, or rewrite it whole (``whole()``) when the state
    has no saved content yet, the base file is missing, or the journal is due for compaction."""
    shared = getattr(kind, "shared", False)
    with state.lock:
        state.compact = whole
        if shared and state.base != base_identity(state.file_name) is not None:
            # Another process rewrote the file from the shared dict, under the lock this flush holds: it holds
            # what this process wrote into the dict before; what it wrote since is appended below.
            state.base, state.journal_bytes = base_identity(state.file_name), _size(journal_path(state.file_name))
        if state.saved is None or state.base != base_identity(state.file_name) \
                or should_compact(state.file_name, state.journal_bytes):  # no content, or the base was replaced
            _rewrite(state, kind, obj, whole)
            return
        touched = state.take_touched(kind)
        if touched is None and (shared or getattr(kind, "keys_only", False)):
            # what changed is unknown, and there is no copy to compare with
            _rewrite(state, kind, obj, whole)
            return
        try:
            record = kind.changes(state.saved, obj, touched)
            if record is None:
                return
            start, end = append_record(state.file_name, record)
            if start == state.journal_bytes or shared:  # else another process appended unseen: to be caught up with
                state.journal_bytes = end
        except (TypeError, orjson.JSONEncodeError):  # a value JSON cannot hold as is: LightRAG's writer sanitises
            state.give_back(touched)
            _rewrite(state, kind, obj, whole)
            return
        except BaseException:
            state.give_back(touched)
            raise
        state.appends += 1
        kind.advance(state.saved, record)


def compact(state: FileState) -> bool:
    """Rewrite the file whole if it has a journal (at ``finalize_storages``); True if it did. Not when another
    process wrote to the file since this one last did: its content here would lack that write."""
    with state.lock:
        if state.compact is None or not os.path.exists(journal_path(state.file_name)):
            return False
        if state.saved is not SHARED and (state.base != base_identity(state.file_name)
                                          or _size(journal_path(state.file_name)) != state.journal_bytes):
            return False
        _rewrite(state, None, None, state.compact)
        return True


def _rewrite(state: FileState, kind, obj, whole: Callable[[], None]) -> None:
    """Rewrite the file whole; ``obj`` (of ``kind``) is then its content, unless None (a compaction: unchanged)."""
    whole()
    remove_journal(state.file_name)
    state.base = base_identity(state.file_name)
    state.journal_bytes = 0
    state.rewrites += 1
    if obj is not None:
        state.note_saved(kind, obj)


def status(states: list[FileState]) -> dict[str, dict[str, int]]:
    """Per journaled file (by name): the flushes appended and written whole, and the other processes' writes caught
    up with or read whole (``/prism/api/modes``)."""
    return {os.path.basename(state.file_name): {"appends": state.appends, "rewrites": state.rewrites,
                                                "catch_ups": state.catch_ups, "reloads": state.reloads}
            for state in states}


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0
