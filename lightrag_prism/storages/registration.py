"""Which of an instance's files are journaled, and what the instance found on disk when it opened them."""

from __future__ import annotations

from lightrag_prism import journal

from ..plugin_state import find_plugin_state
from .graph import PrismNetworkXStorage
from .json_stores import JournaledJsonStore
from .nano import PrismNanoVectorDBStorage


def register_files(rag) -> list[journal.FileState]:
    """Journal the files of ``rag``'s storages: the vector stores, the graph, the JSON KV stores (chunks, documents,
    entity and relation chunk lists, the LLM cache, the plugin's vector cache) and the doc-status store. Called
    before the storages are initialized; the graph loaded its file when LightRAG constructed it, so its content is
    noted here (a vector store's, when it reads its file on first use).

    In LightRAG's multi-process mode the vector stores and the graph, which every process loads for itself, catch
    up with other processes' appends (``journal.catch_up``); the JSON stores' dicts are shared there, so their
    flushes append what this process wrote without copying the dict (``journal.SharedKVKind``). A compaction then
    holds the storage's lock (``FileState.guard``)."""
    from lightrag.kg import shared_storage

    across_processes = bool(shared_storage._is_multiprocess)
    states = []
    for storage in vars(rag).values():
        if isinstance(storage, PrismNanoVectorDBStorage):
            state = journal.register(storage._client_file_name)
            if storage.client_read:  # else noted when the file is read (``_read_client``)
                client = storage._client
                journal.adopt(state, client.rows_kind, client.rows_and_matrix)
        elif isinstance(storage, PrismNetworkXStorage):
            state = journal.register(storage._graphml_xml_file)
            if storage._graph is not None:  # loaded when the storage was constructed
                journal.adopt(state, journal.GraphKind, storage._graph)
        else:
            continue
        states.append(_shared(state, storage) if across_processes else state)
    for store, _ in _json_stores(rag):
        state = journal.register(store._file_name)
        if across_processes:  # one dict in LightRAG's manager: appended to, never copied
            _shared(state, store).shared_content = True
            journal.adopt(state, journal.SharedKVKind, None)
        states.append(state)
    return states


def _shared(state: journal.FileState, storage) -> journal.FileState:
    state.across_processes = True
    state.guard = lambda: storage._storage_lock
    return state


def _json_stores(rag) -> list[tuple[object, type]]:
    """``rag``'s journaled JSON stores with their journal kind: the KV stores, the doc-status store and the plugin's
    vector cache (not its document store)."""
    stores = [(storage, storage.journal_kind) for storage in vars(rag).values()
              if isinstance(storage, JournaledJsonStore)]
    plugin = find_plugin_state(rag)
    vectors = getattr(plugin, "vectors_store", None)
    if isinstance(vectors, JournaledJsonStore) and vectors is not getattr(plugin, "documents_store", None):
        stores.append((vectors, vectors.journal_kind))
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

    from lightrag.utils import load_json

    adopted = 0
    for storage, kind in _json_stores(rag):
        if getattr(storage, "unread", False):  # noted when its file is read, on first use
            continue
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
