"""LightRAG's four file storages as PrismRAG runs them: subclasses, used only by PrismRAG instances.

PrismRAG builds its storages from these classes where LightRAG would take its defaults (``JsonKVStorage``,
``JsonDocStatusStorage``, ``NanoVectorDBStorage``, ``NetworkXStorage``; the names in a user's config stay those):

* every flush appends what changed to a journal beside the file (``lightrag_prism/journal.py``), folded back into
  the file at ``finalize_storages``, so a small insert into a big index writes what it changed;
* whole rewrites by faster writers that give the same files (orjson, a direct GraphML writer);
* the doc-status lookups by content hash and path answered from an index, the vector store's updates in place.

A stock ``LightRAG`` instance in the same process keeps LightRAG's classes and reads and writes exactly as without
the plugin (``tests/foundation/test_replaced_symbols.py``). The storages choose nothing by themselves: PrismRAG
asks for them through :func:`prism_storage_class` (``patches/storage_classes.py``).
"""

from __future__ import annotations

from ..patches.private import register_symbols

# What the subclasses override or read of LightRAG's classes (module, attribute path, number of parameters).
register_symbols(
    ("lightrag.kg.json_kv_impl", "JsonKVStorage._migrate_legacy_cache_structure", 2),
    ("lightrag.kg.json_kv_impl", "JsonKVStorage.upsert", 2),
    ("lightrag.kg.json_kv_impl", "JsonKVStorage.delete", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.upsert", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.update_doc_status_fields", 4),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.delete", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.repair_source_conflict", 6),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_content_hash", 3),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.resolve_doc_source_strict", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_file_basename", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage.get_doc_by_file_path", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage._row_points_at_as_duplicate", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage._row_sort_key", 2),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage._is_duplicate_row", 1),
    ("lightrag.kg.json_doc_status_impl", "JsonDocStatusStorage._scheduling_record_from_raw", 2),
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage.__post_init__", 1),
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage._save_to_disk_locked", 2),
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage._reload_client_from_disk_locked", 2),
    ("lightrag.kg.nano_vector_db_impl", "NanoVectorDBStorage._get_client", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.__post_init__", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage._get_graph", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage._gate", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.load_nx_graph", 1),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.upsert_node", 3),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.upsert_nodes_batch", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.upsert_edge", 4),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.upsert_edges_batch", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.delete_node", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.remove_nodes", 2),
    ("lightrag.kg.networkx_impl", "NetworkXStorage.remove_edges", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.upsert", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.delete", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.get", 2),
    ("nano_vectordb.dbs", "NanoVectorDB.save", 1),
)

from .doc_status import PrismJsonDocStatusStorage  # noqa: E402
from .graph import PrismNetworkXStorage  # noqa: E402
from .kv import PrismJsonKVStorage  # noqa: E402
from .nano import JournaledNanoVectorDB, PrismNanoVectorDBStorage  # noqa: E402
from .registration import adopt_shared_namespaces, register_files  # noqa: E402

PRISM_STORAGE_CLASSES: dict[str, type] = {
    "JsonKVStorage": PrismJsonKVStorage,
    "JsonDocStatusStorage": PrismJsonDocStatusStorage,
    "NanoVectorDBStorage": PrismNanoVectorDBStorage,
    "NetworkXStorage": PrismNetworkXStorage,
}


def prism_storage_class(storage_name: str) -> type | None:
    """PrismRAG's class for a LightRAG storage name, or None where LightRAG's own is used (the server-backed ones)."""
    return PRISM_STORAGE_CLASSES.get(storage_name)


__all__ = ["PRISM_STORAGE_CLASSES", "JournaledNanoVectorDB", "PrismJsonDocStatusStorage", "PrismJsonKVStorage",
           "PrismNanoVectorDBStorage", "PrismNetworkXStorage", "adopt_shared_namespaces", "prism_storage_class",
           "register_files"]
