"""LightRAG's own storage writers, back for a while: the insert benchmark's stock baseline runs with them.

``fast_json``, ``fast_graphml``, ``journaled_stores`` and ``doc_status_index`` replace the writers (and the
journal-replaying readers, the write methods that note what they change and the doc-status lookups) process-wide
at import and keep each original as ``__wrapped__``; :func:`stock_storage_writers` puts LightRAG's originals back
for the duration of a ``with`` block.
"""

from __future__ import annotations

from contextlib import contextmanager

from .doc_status_index import _REPLACED
from .journaled_stores import _DOC_STATUS_WRITES, _GRAPH_WRITES, _KV_WRITES


def _original(function):
    while hasattr(function, "__wrapped__") and getattr(function, "__module__", "").startswith("lightrag_prism"):
        function = function.__wrapped__
    return function


@contextmanager
def stock_storage_writers():
    from lightrag.kg import json_doc_status_impl, json_kv_impl, nano_vector_db_impl, networkx_impl
    from nano_vectordb import NanoVectorDB

    graph_storage, vector_storage = networkx_impl.NetworkXStorage, nano_vector_db_impl.NanoVectorDBStorage
    patched = [(json_kv_impl, "write_json", json_kv_impl.write_json),
               (json_kv_impl, "load_json", json_kv_impl.load_json),
               (json_doc_status_impl, "write_json", json_doc_status_impl.write_json),
               (NanoVectorDB, "save", NanoVectorDB.save), (NanoVectorDB, "get", NanoVectorDB.get),
               (nano_vector_db_impl, "NanoVectorDB", nano_vector_db_impl.NanoVectorDB),
               (vector_storage, "_save_to_disk_locked", vector_storage._save_to_disk_locked),
               (graph_storage, "write_nx_graph", graph_storage.__dict__["write_nx_graph"]),
               (graph_storage, "load_nx_graph", graph_storage.__dict__["load_nx_graph"]),
               (json_doc_status_impl, "load_json", json_doc_status_impl.load_json)]
    doc_status = json_doc_status_impl.JsonDocStatusStorage
    patched += [(graph_storage, name, getattr(graph_storage, name)) for name in _GRAPH_WRITES]
    patched += [(doc_status, name, getattr(doc_status, name)) for name in (*_DOC_STATUS_WRITES, *_REPLACED)]
    patched += [(json_kv_impl.JsonKVStorage, name, getattr(json_kv_impl.JsonKVStorage, name)) for name in _KV_WRITES]
    for owner, name, current in patched:
        original = _original(getattr(current, "__func__", current))
        setattr(owner, name, staticmethod(original) if isinstance(current, staticmethod) else original)
    try:
        yield
    finally:
        for owner, name, current in patched:
            setattr(owner, name, current)
