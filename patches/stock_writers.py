"""LightRAG's own storage writers, back for a while: the insert benchmark's stock baseline runs with them.

``fast_json`` and ``fast_graphml`` replace the writers process-wide at import and keep each original as
``__wrapped__``; :func:`stock_storage_writers` puts the originals back for the duration of a ``with`` block.
"""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def stock_storage_writers():
    from lightrag.kg import json_doc_status_impl, json_kv_impl, networkx_impl
    from nano_vectordb import NanoVectorDB

    graph_storage = networkx_impl.NetworkXStorage
    patched = [(json_kv_impl, "write_json", json_kv_impl.write_json),
               (json_doc_status_impl, "write_json", json_doc_status_impl.write_json),
               (NanoVectorDB, "save", NanoVectorDB.save), (NanoVectorDB, "get", NanoVectorDB.get),
               (graph_storage, "write_nx_graph", graph_storage.__dict__["write_nx_graph"])]
    for owner, name, current in patched:
        original = getattr(current, "__func__", current).__wrapped__
        setattr(owner, name, staticmethod(original) if isinstance(current, staticmethod) else original)
    try:
        yield
    finally:
        for owner, name, current in patched:
            setattr(owner, name, current)
