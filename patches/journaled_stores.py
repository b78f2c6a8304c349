"""LightRAG's whole-file stores read and written through the plugin's journals (``lightrag_prism/journal.py``).

Loads replay a file's journal for every reader; writes append to it only for files a PrismRAG instance registered
(:func:`lightrag_prism.journal.register`), every other write is LightRAG's own whole rewrite (which makes any old
journal stale). Private coupling, each replaced once at import:

* ``lightrag.kg.nano_vector_db_impl.NanoVectorDB`` (the name the storage constructs, at start and on a reload after
  another process wrote): a subclass that replays the journal after loading;
* ``NanoVectorDBStorage._save_to_disk_locked(self, on_committed)``: the storage's whole-file save; journaled files
  append instead, in the same storage-IO call (``commit_in_storage_io``) with the same ``on_committed``;
* ``NetworkXStorage.load_nx_graph`` / ``write_nx_graph`` (static methods);
* ``lightrag.kg.json_kv_impl.load_json`` / ``write_json`` (JSON KV stores), and the same names in
  ``json_doc_status_impl`` (the doc-status store);
* the JSON stores' ``_file_name`` and ``_data`` (the dict LightRAG shares per process) and ``lightrag.utils.load_json``,
  read by :func:`adopt_shared_namespaces` (which adopts nothing when they are missing);
* ``nano_vectordb``'s private ``__storage`` dict, whose rows and matrix the subclass updates in place.

So that a flush looks only at what changed, the vector rows and the graph are tracked (``journal.touch``):
``NanoVectorDB.upsert``/``delete`` (every change LightRAG makes to a vector store's rows goes through them) and
``NetworkXStorage``'s upserts and removals (its public write API; a node's removal touches its edges too),
``JsonKVStorage``'s upserts and deletes (the only writes of its dict after the load; a drop makes the next flush
compare everything), and ``JsonDocStatusStorage``'s upserts, field updates and deletes (a source-conflict repair or
a drop, whose ids the arguments do not name, makes the next flush compare everything).
"""

from __future__ import annotations

import contextlib
from functools import partial

import numpy as np

from lightrag_prism import journal

from . import doc_status_index
from .private import register_symbols

_SYMBOLS = [
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage._save_to_disk_locked", 2),
    ("lightrag.kg.nano_vector_db_impl", "commit_in_storage_io", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.load_nx_graph", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.write_nx_graph", 3),
    ("lightrag.kg.json_kv_impl", "load_json", 1),
    ("lightrag.kg.json_kv_impl", "write_json", 2),
    ("lightrag.kg.json_kv_impl", "JsonKVStorage.upsert", 2),
    ("lightrag.kg.json_kv_impl", "JsonKVStorage.delete", 2),
    ("lightrag.kg.json_kv_impl", "JsonKVStorage.drop", 1),
    ("lightrag.kg.json_doc_status_impl", "load_json", 1),
    ("lightrag.kg.json_doc_status_impl", "write_json", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.upsert", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.update_doc_status_fields", 4),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.delete", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.upsert", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.delete", 2),
    ("lightrag.utils", "load_json", 1),
]
register_symbols(*_SYMBOLS)

_NANO_STORAGE = "_NanoVectorDB__storage"
_MARK = "_prism_journaled"


def _marked(function):
    setattr(function, _MARK, True)
    return function


GROWTH = 1.25  # spare rows allocated when a vector store's matrix grows (amortised appends)
FEW_IDS_SHARE = 8  # a vector store's get of up to 1/8 of its rows uses the id -> row index; more, one pass


def _nano_class(base):
    from nano_vectordb.dbs import Float, f_ID, f_VECTOR, hash_ndarray, normalize

    rows = journal.RowsKind(f_ID)

    class JournaledNanoVectorDB(base):
        """NanoVectorDB that replays its file's journal after loading the file, notes the ids it changes, and
        upserts in O(rows written): ``upsert`` passed over every row to find the ones it updates and stacked the
        whole matrix anew for every new row batch, two O(store) steps per flush. Here an id -> row index finds
        them, and new rows go into spare capacity; ``get`` of a few ids uses that index too. Rows, matrix and report
        equal nano-vectordb's own."""

        def __post_init__(self):
            super().__post_init__()
            journal.replay(self.storage_file, rows, getattr(self, _NANO_STORAGE))
            self._prism_buffer = None
            self._prism_rows = None

        def _cached_row_of(self) -> dict | None:
            """The id -> row index kept for the current row list, or None when the row list is another list or
            another length (a reload, a stock write); ``upsert`` and ``delete`` below keep it current."""
            data, cached = getattr(self, _NANO_STORAGE)["data"], self._prism_rows
            return cached[2] if cached is not None and cached[0] is data and cached[1] == len(data) else None

        def _row_of(self) -> dict:
            """id -> row index, rebuilt over every row when not current."""
            row_of = self._cached_row_of()
            if row_of is None:
                data = getattr(self, _NANO_STORAGE)["data"]
                row_of = {row[f_ID]: i for i, row in enumerate(data)}
                self._prism_rows = (data, len(data), row_of)
            return row_of

        def current_row_index(self) -> dict | None:
            """The id -> row index if it is current and every id is on one row, else None (never rebuilt here:
            the journal's flush calls this from the storage-IO thread)."""
            row_of = self._cached_row_of()
            return row_of if row_of is not None and len(row_of) == len(getattr(self, _NANO_STORAGE)["data"]) else None

        def get(self, ids):
            """nano-vectordb's get, a few ids found through the id -> row index: a pass over 21,000 rows was 10 ms,
            twice in the first query after a deletion. Many ids, unhashable ones or an id on two rows: the pass."""
            try:
                wanted = set(ids)
            except TypeError:
                return super().get(ids)
            data = getattr(self, _NANO_STORAGE)["data"]
            row_of = self._row_of() if len(wanted) * FEW_IDS_SHARE <= len(data) else None
            if row_of is None or len(row_of) != len(data):
                return super().get(ids)
            return [data[i] for i in sorted(i for i in map(row_of.get, wanted) if i is not None)]

        def upsert(self, datas):
            ids = [data[f_ID] if f_ID in data else hash_ndarray(data[f_VECTOR]) for data in datas]  # as upsert does
            try:
                storage = getattr(self, _NANO_STORAGE)
                if self.metric != "cosine":
                    return super().upsert(datas)
                row_of = self._row_of()
                by_id = dict(zip(ids, datas))  # a repeated id: the last one wins, as in upsert
                # upsert's update in place, found by id instead of by a pass over every row
                updated = sorted((row_of[vid], vid) for vid in by_id if vid in row_of)
                for i, vid in updated:
                    data = by_id[vid]
                    storage["matrix"][i] = normalize(data[f_VECTOR]).astype(Float)
                    del data[f_VECTOR]
                    storage["data"][i] = data
                report = {"update": [vid for _, vid in updated], "insert": []}
                new = {vid: data for vid, data in by_id.items() if vid not in row_of}
                if new:  # upsert's insertion, into spare rows instead of a new stacked matrix
                    vectors = np.array([normalize(data[f_VECTOR]) for data in new.values()], dtype=Float)
                    for vid, data in new.items():
                        del data[f_VECTOR]
                        data[f_ID] = vid
                    row_of.update((vid, len(storage["data"]) + k) for k, vid in enumerate(new))
                    storage["data"].extend(new.values())
                    storage["matrix"] = self._appended(storage["matrix"], vectors)
                    report["insert"].extend(new)
                    self._prism_rows = (storage["data"], len(storage["data"]), row_of)
                return report
            finally:
                journal.touch(self.storage_file, ids)

        def _appended(self, matrix, vectors):
            n, k = len(matrix), len(vectors)
            buffer = self._prism_buffer
            if buffer is None or matrix.base is not buffer or len(buffer) < n + k or not matrix.flags.c_contiguous:
                buffer = np.empty((max(int((n + k) * GROWTH), n + k), vectors.shape[1]), dtype=Float)
                buffer[:n] = matrix
                self._prism_buffer = buffer
            buffer[n:n + k] = vectors
            return buffer[:n + k]

        def delete(self, ids):
            """nano-vectordb's delete, with the matrix and the row list compacted in place and the id -> row index
            kept current.

            ``np.delete`` allocated and copied the whole matrix (measured 50 ms per store at 21,000 rows inside an
            indexing process, three stores per document deleted), and the next upsert copied it again into new
            spare capacity. A new row list made the next get/upsert/delete rebuild the index over every row (three
            rebuilds per document deleted from the 9,000-passage bench index, 26-82 ms in all), and being new,
            Python's young collections walked its 60,000 entries until it aged."""
            ids = list(ids)
            try:
                storage = getattr(self, _NANO_STORAGE)
                data, matrix, row_of = storage["data"], storage["matrix"], self._row_of()
                if len(row_of) != len(data) or not matrix.flags.writeable:  # an id on two rows; a read-only load
                    return super().delete(ids)
                gone = sorted({row_of[vid] for vid in ids if vid in row_of})
                if not gone:
                    return
                # Rows between two removed ones move up by the number removed before them (slices, no copy
                # of the whole matrix or list).
                first, bounds, tail = gone[0], gone[1:] + [len(data)], []
                end = first
                for row, following in zip(gone, bounds):
                    size = following - row - 1
                    matrix[end:end + size] = matrix[row + 1:following]
                    tail.extend(data[row + 1:following])
                    end += size
                for row in gone:
                    del row_of[data[row][f_ID]]
                data[first:] = tail
                row_of.update(zip([row[f_ID] for row in tail], range(first, len(data))))
                self._prism_rows = (data, len(data), row_of)
                storage["matrix"] = matrix[:end]
            finally:
                journal.touch(self.storage_file, ids)

    JournaledNanoVectorDB.rows_kind = rows
    return _marked(JournaledNanoVectorDB)


def _nano_save(original, commit_in_storage_io):
    async def _save_to_disk_locked(self, on_committed):
        file_name = self._client_file_name
        state = journal.registered(file_name)
        client = self._client
        if state is None or not hasattr(client, _NANO_STORAGE):
            async def committed():
                journal.remove_journal(file_name)  # the base now holds everything
                await on_committed()
            return await original(self, committed)

        def whole() -> None:
            from lightrag.file_atomic import atomic_write

            def save_to(tmp: str) -> None:
                path, client.storage_file = client.storage_file, tmp
                try:
                    client.save()
                finally:
                    client.storage_file = path

            atomic_write(file_name, save_to, self.workspace or "_")

        # the flush finds the changed rows through the store's id -> row index (held current under the storage
        # lock, which this save holds) instead of a pass over every row
        kind = type(client).rows_kind.with_index(client.current_row_index)
        await commit_in_storage_io(partial(journal.flush, state, kind, getattr(client, _NANO_STORAGE), whole),
                                   on_committed)

    return _marked(_save_to_disk_locked)


def _replaying_loader(kind):
    """A loader wrapper (``original(file_name)`` -> content or None) that replays the file's journal."""
    def wrap(original):
        def load(file_name):
            loaded = original(file_name)
            return loaded if loaded is None else journal.replay(file_name, kind, loaded)

        return _marked(load)

    return wrap


def _graph_write(original):
    def write_nx_graph(graph, file_name, workspace="_"):
        state = journal.registered(file_name)
        if state is None:
            original(graph, file_name, workspace)
            journal.remove_journal(file_name)
            return
        journal.flush(state, journal.GraphKind, graph, partial(original, graph, file_name, workspace))

    return _marked(write_nx_graph)


def _touching(touched_keys):
    """A wrapper of a ``NetworkXStorage`` write method (``original(self, *args)``) that notes what it changes:
    ``touched_keys(graph, *args)``, taken before the call (a removal looks up the edges it takes along)."""
    def wrap(original):
        async def write(self, *args, **kwargs):
            file_name = self._graphml_xml_file
            keys = touched_keys(await self._get_graph(), *args, **kwargs) if journal.registered(file_name) else ()
            try:
                return await original(self, *args, **kwargs)
            finally:
                if keys:
                    journal.touch(file_name, keys)

        return _marked(write)

    return wrap


def _node_keys(nodes):
    return [journal.node_touch(node) for node in nodes]


def _removed_node_keys(graph, nodes):
    keys = _node_keys(nodes)
    for node in nodes:
        if node in graph:
            keys.extend(journal.edge_touch(u, v) for u, v in graph.edges(node))
    return keys


_GRAPH_WRITES = {  # method -> what it changes, from its arguments
    "upsert_node": lambda graph, node_id, node_data: _node_keys([node_id]),
    "upsert_nodes_batch": lambda graph, nodes: _node_keys([node for node, _ in nodes]),
    "upsert_edge": lambda graph, src, tgt, edge_data: [journal.edge_touch(src, tgt), *_node_keys([src, tgt])],
    "upsert_edges_batch": lambda graph, edges: [key for src, tgt, _ in edges
                                                for key in (journal.edge_touch(src, tgt), *_node_keys([src, tgt]))],
    "delete_node": lambda graph, node_id: _removed_node_keys(graph, [node_id]),
    "remove_nodes": lambda graph, nodes: _removed_node_keys(graph, list(nodes)),
    "remove_edges": lambda graph, edges: [journal.edge_touch(src, tgt) for src, tgt in edges],
}


def _named(ids) -> list | None:
    """The keys a write names, or None when they cannot be read without consuming the argument."""
    return list(ids) if isinstance(ids, (list, tuple, set, frozenset, dict)) else None


def _noting_keys(named_ids, lookup_index: bool = False):
    """A wrapper of a JSON store's write method that notes the keys it names (``named_ids(*args)``) for the journal,
    and with ``lookup_index`` for the doc-status lookup index (``doc_status_index.py``), which reads those rows again.

    The keys are pinned around the call (``journal.pinned``): doc-status upserts and field updates flush before they
    return, and every flush during the write must look at them too. A write whose keys the arguments do not name
    (``named_ids`` None, or an argument ``_named`` declines) makes the flushes during and after it compare
    everything."""
    def wrap(original):
        async def write(self, *args, **kwargs):
            ids = None if named_ids is None else named_ids(*args, **kwargs)
            with doc_status_index.note_write(self, ids) if lookup_index else contextlib.nullcontext():
                if ids is None:
                    journal.untrack(self._file_name)
                    try:
                        return await original(self, *args, **kwargs)
                    finally:
                        journal.untrack(self._file_name)
                with journal.pinned(self._file_name, ids):
                    return await original(self, *args, **kwargs)

        return _marked(write)

    return wrap


# method -> the keys it changes, from its arguments (None: not named by them)
_DOC_STATUS_WRITES = {
    "upsert": lambda data: _named(data),
    "update_doc_status_fields": lambda doc_id, fields, missing_ok=False: [doc_id],
    "delete": lambda doc_ids: _named(doc_ids),
    "repair_source_conflict": None,
    "drop": None,
}
_KV_WRITES = {
    "upsert": lambda data: _named(data),
    "delete": lambda ids: _named(ids),
    "drop": None,
}


def _kv_write(kind):
    def wrap(original):
        def write_json(json_obj, file_name):
            state = journal.registered(file_name)
            if state is None:
                sanitized = original(json_obj, file_name)
                journal.remove_journal(file_name)
                return sanitized
            sanitized = []  # what LightRAG's writer says when the flush rewrites the file whole

            def whole() -> None:
                sanitized.append(original(json_obj, file_name))

            journal.flush(state, kind, json_obj, whole)
            return bool(sanitized and sanitized[-1])  # True: the caller reloads the sanitised file, as LightRAG does

        return _marked(write_json)

    return wrap


def _replace(owner, name: str, make, *, static: bool = False) -> None:
    current = owner.__dict__[name] if static else getattr(owner, name)
    function = current.__func__ if isinstance(current, staticmethod) else current
    if getattr(function, _MARK, False):
        return
    replacement = make(function)
    replacement.__wrapped__ = function
    setattr(owner, name, staticmethod(replacement) if static else replacement)


def install() -> None:
    from lightrag.kg import json_doc_status_impl, json_kv_impl, nano_vector_db_impl, networkx_impl

    _replace(nano_vector_db_impl, "NanoVectorDB", _nano_class)
    _replace(nano_vector_db_impl.NanoVectorDBStorage, "_save_to_disk_locked",
             lambda original: _nano_save(original, nano_vector_db_impl.commit_in_storage_io))
    _replace(networkx_impl.NetworkXStorage, "load_nx_graph", _replaying_loader(journal.GraphKind), static=True)
    _replace(networkx_impl.NetworkXStorage, "write_nx_graph", _graph_write, static=True)
    for name, touched_keys in _GRAPH_WRITES.items():
        _replace(networkx_impl.NetworkXStorage, name, _touching(touched_keys))
    _replace(json_kv_impl, "load_json", _replaying_loader(journal.TrackedKVKind))
    _replace(json_kv_impl, "write_json", _kv_write(journal.TrackedKVKind))
    for name, named_ids in _KV_WRITES.items():
        _replace(json_kv_impl.JsonKVStorage, name, _noting_keys(named_ids))
    _replace(json_doc_status_impl, "load_json", _replaying_loader(journal.DocStatusKind))
    _replace(json_doc_status_impl, "write_json", _kv_write(journal.DocStatusKind))
    for name, named_ids in _DOC_STATUS_WRITES.items():
        _replace(json_doc_status_impl.JsonDocStatusStorage, name, _noting_keys(named_ids, lookup_index=True))


def register_files(rag) -> list[journal.FileState]:
    """Journal the files of ``rag``'s storages: the vector stores, the graph, the JSON KV stores (chunks, documents,
    entity and relation chunk lists, the LLM cache, the plugin's vector cache) and the doc-status store. None in
    LightRAG's multi-process mode. Called before the storages are initialized; the vector stores and the graph
    loaded their files when LightRAG constructed them, so their content is noted here."""
    from lightrag.kg import shared_storage
    from lightrag.kg.nano_vector_db_impl import NanoVectorDBStorage
    from lightrag.kg.networkx_impl import NetworkXStorage

    if shared_storage._is_multiprocess:
        return []
    states = []
    for storage in vars(rag).values():
        if isinstance(storage, NanoVectorDBStorage):
            states.append(journal.register(storage._client_file_name))
            client = storage._client
            if hasattr(client, _NANO_STORAGE) and hasattr(type(client), "rows_kind"):
                journal.adopt(states[-1], type(client).rows_kind, getattr(client, _NANO_STORAGE))
        elif isinstance(storage, NetworkXStorage):
            states.append(journal.register(storage._graphml_xml_file))
            if storage._graph is not None:  # loaded when the storage was constructed
                journal.adopt(states[-1], journal.GraphKind, storage._graph)
    states.extend(journal.register(store._file_name) for store, _ in _json_stores(rag))
    return states


def _json_stores(rag) -> list[tuple[object, type]]:
    """``rag``'s journaled JSON stores with their journal kind: the KV stores, the doc-status store and the plugin's
    vector cache (not its document store)."""
    from lightrag.kg.json_doc_status_impl import JsonDocStatusStorage
    from lightrag.kg.json_kv_impl import JsonKVStorage

    stores = [(storage, journal.DocStatusKind if isinstance(storage, JsonDocStatusStorage) else journal.TrackedKVKind)
              for storage in vars(rag).values() if isinstance(storage, (JsonKVStorage, JsonDocStatusStorage))]
    plugin = getattr(rag, "_prism_state", None)
    vectors = getattr(plugin, "vectors_store", None)
    if isinstance(vectors, JsonKVStorage) and vectors is not getattr(plugin, "documents_store", None):
        stores.append((vectors, journal.TrackedKVKind))
    return stores


def adopt_shared_namespaces(rag) -> int:
    """After ``initialize_storages``: note as saved the JSON stores this instance did not load itself.

    LightRAG loads a JSON store's file once per process and (namespace, workspace); a second instance on the same
    working dir in that process (created again after ``finalize_storages``, or beside another) shares the loaded dict
    and never reads the file, so its journal state had no content and the first flush of each store rewrote it
    whole: at 3,000 passages, 0.6 s of CPU added to the next small insert. The file and its journal are read here;
    when they hold exactly the shared dict, the dict is adopted as the file's content and flushes append again.
    Otherwise (changes not flushed yet) nothing is adopted and the first flush rewrites the file, as before.
    Returns how many stores were adopted."""
    import os

    from lightrag.utils import load_json  # LightRAG's own reader: the stores' module-level one replays and adopts

    adopted = 0
    for storage, kind in _json_stores(rag):
        state, data = journal.registered(storage._file_name), getattr(storage, "_data", None)
        if state is None or state.saved is not None or not isinstance(data, dict) \
                or not os.path.exists(storage._file_name):
            continue
        on_disk = load_json(storage._file_name) or {}
        for record in journal.read_journal(storage._file_name):
            kind.apply(on_disk, record)
        if on_disk == data:
            journal.adopt(state, kind, data)
            adopted += 1
    return adopted


install()
