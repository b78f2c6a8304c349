"""LightRAG's whole-file stores read and written through the plugin's journals (``lightrag_prism/journal.py``).

Loads replay a file's journal for every reader; writes append to it only for files a PrismRAG instance registered
(:func:`lightrag_prism.journal.register`), every other write is LightRAG's own whole rewrite (which makes any old
journal stale). Private coupling, each replaced once at import:

* ``lightrag.kg.nano_vector_db_impl.NanoVectorDB`` (the name the storage constructs, at start and on a reload after
  another process wrote): a subclass that replays the journal after loading;
* ``NanoVectorDBStorage._save_to_disk_locked(self, on_committed)``: the storage's whole-file save; journaled files
  append instead, in the same storage-IO call (``commit_in_storage_io``) with the same ``on_committed``;
* ``NetworkXStorage.load_nx_graph`` / ``write_nx_graph`` (static methods);
* ``lightrag.kg.json_kv_impl.load_json`` / ``write_json`` (JSON KV stores; the doc-status store is not journaled).
"""

from __future__ import annotations

from functools import partial

from lightrag_prism import journal

from .private import PRIVATE_SYMBOLS, check_symbol

_SYMBOLS = [
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage._save_to_disk_locked", 2),
    ("lightrag.kg.nano_vector_db_impl", "commit_in_storage_io", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.load_nx_graph", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.write_nx_graph", 3),
    ("lightrag.kg.json_kv_impl", "load_json", 1),
    ("lightrag.kg.json_kv_impl", "write_json", 2),
]
PRIVATE_SYMBOLS.extend(_SYMBOLS)
for _symbol in _SYMBOLS:
    check_symbol(*_symbol)

_NANO_STORAGE = "_NanoVectorDB__storage"
_MARK = "_prism_journaled"


def _marked(function):
    setattr(function, _MARK, True)
    return function


def _nano_class(base):
    from nano_vectordb.dbs import f_ID

    rows = journal.RowsKind(f_ID)

    class JournaledNanoVectorDB(base):
        """NanoVectorDB that replays its file's journal after loading the file."""

        def __post_init__(self):
            super().__post_init__()
            journal.replay(self.storage_file, rows, getattr(self, _NANO_STORAGE))

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

        await commit_in_storage_io(
            partial(journal.flush, state, type(client).rows_kind, getattr(client, _NANO_STORAGE), whole),
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


def _kv_write(original):
    def write_json(json_obj, file_name):
        state = journal.registered(file_name)
        if state is None:
            sanitized = original(json_obj, file_name)
            journal.remove_journal(file_name)
            return sanitized
        sanitized = []  # what LightRAG's writer says when the flush rewrites the file whole

        def whole() -> None:
            sanitized.append(original(json_obj, file_name))

        journal.flush(state, journal.KVKind, json_obj, whole)
        return bool(sanitized and sanitized[-1])  # True: the caller reloads the sanitised file, as LightRAG does

    return _marked(write_json)


def _replace(owner, name: str, make, *, static: bool = False) -> None:
    current = owner.__dict__[name] if static else getattr(owner, name)
    function = current.__func__ if isinstance(current, staticmethod) else current
    if getattr(function, _MARK, False):
        return
    replacement = make(function)
    replacement.__wrapped__ = function
    setattr(owner, name, staticmethod(replacement) if static else replacement)


def install() -> None:
    from lightrag.kg import json_kv_impl, nano_vector_db_impl, networkx_impl

    _replace(nano_vector_db_impl, "NanoVectorDB", _nano_class)
    _replace(nano_vector_db_impl.NanoVectorDBStorage, "_save_to_disk_locked",
             lambda original: _nano_save(original, nano_vector_db_impl.commit_in_storage_io))
    _replace(networkx_impl.NetworkXStorage, "load_nx_graph", _replaying_loader(journal.GraphKind), static=True)
    _replace(networkx_impl.NetworkXStorage, "write_nx_graph", _graph_write, static=True)
    _replace(json_kv_impl, "load_json", _replaying_loader(journal.KVKind))
    _replace(json_kv_impl, "write_json", _kv_write)


def register_files(rag) -> list[journal.FileState]:
    """Journal the files of ``rag``'s storages: the vector stores, the graph, the JSON KV stores (chunks, documents,
    entity and relation chunk lists, the LLM cache, the plugin's vector cache); not the doc-status store (see
    journal.py). None in LightRAG's multi-process mode. Called before the storages are initialized; the vector
    stores have loaded their files already, so their content is noted here."""
    from lightrag.kg import shared_storage
    from lightrag.kg.json_kv_impl import JsonKVStorage
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
        elif isinstance(storage, JsonKVStorage):
            states.append(journal.register(storage._file_name))
    plugin = getattr(rag, "_prism_state", None)
    vectors = getattr(plugin, "vectors_store", None)
    if isinstance(vectors, JsonKVStorage) and vectors is not getattr(plugin, "documents_store", None):
        states.append(journal.register(vectors._file_name))
    return states


install()
