"""``JsonKVStorage`` as PrismRAG runs it: journaled (``json_stores.py``), read without copies by the views, and the
stores only LightRAG's insert and deletion read left on disk until then."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from lightrag.kg.json_kv_impl import JsonKVStorage

from .json_stores import JournaledJsonStore, named_keys


# The namespaces only LightRAG's insert and deletion read (the documents, each document's entities and relations,
# each entity's and relation's chunk lists): read from their file when first used, so a process that only answers
# queries never holds them (122 MB at 9,239 passages).
READ_ON_FIRST_USE = frozenset({"full_docs", "full_entities", "full_relations", "entity_chunks", "relation_chunks"})
# (namespace, workspace) -> the file that fills the process's shared dict of that namespace when first used
_UNREAD: dict[tuple[str, str], str] = {}
_UNREAD_LOCK = threading.Lock()


class PrismJsonKVStorage(JournaledJsonStore, JsonKVStorage):
    """LightRAG's JSON KV store whose flushes append to a journal; ``upsert`` and ``delete`` note their keys. The
    :data:`READ_ON_FIRST_USE` namespaces read their file when their dict is first used (LightRAG's methods all go
    through ``_data``), except in LightRAG's multi-process mode, where the dict is the manager's and the process
    that initialized it must fill it."""

    @property
    def _data(self):
        data = self.__dict__.get("_prism_data")
        if data is not None and _UNREAD and (self.namespace, self.workspace) in _UNREAD:
            self._read_deferred(data)
        return data

    @_data.setter
    def _data(self, data) -> None:
        self.__dict__["_prism_data"] = data

    @property
    def unread(self) -> bool:
        """Whether the file is still on disk only (tools and tests; reading ``_data`` reads it)."""
        return (self.namespace, self.workspace) in _UNREAD

    def _defer_read(self) -> bool:
        from lightrag.kg import shared_storage

        if self.namespace not in READ_ON_FIRST_USE or shared_storage._is_multiprocess:
            return False
        with _UNREAD_LOCK:
            _UNREAD[(self.namespace, self.workspace)] = self._file_name
        return True

    def _read_deferred(self, data: dict) -> None:
        with _UNREAD_LOCK:
            file_name = _UNREAD.get((self.namespace, self.workspace))
            if file_name is None:  # read meanwhile
                return
            data.update(self._read_file(file_name))
            del _UNREAD[(self.namespace, self.workspace)]

    async def _loaded(self, data: dict) -> dict:
        if self.namespace.endswith("_cache"):  # as LightRAG's initialize does
            return await self._migrate_legacy_cache_structure(data)
        return data

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        with self._writing(named_keys(data)):
            return await super().upsert(data)

    async def delete(self, ids: list[str]) -> None:
        with self._writing(named_keys(ids)):
            return await super().delete(ids)

    async def read_fields(self, ids: list[str], fields: tuple[str, ...]) -> list[dict[str, Any] | None]:
        """For each id, ``{field: value}`` of its record (None where ``get_by_ids`` gives None: missing or empty),
        without ``get_by_ids``' deep copies (reading every passage's text that way cost about 0.4 s at 3,000
        passages, after each small insert). In-process: from the shared dict, with no ``await`` between the first
        read and the last. In LightRAG's multi-process mode the dict is the manager's, and ``get_by_ids`` asks it
        once per id on the event loop (every passage's record after each upload to another worker: 9,000 round
        trips, seconds of stalled queries at the pooled bench's size): here many ids are read by one copy of the
        dict, a few by one call each, in a thread."""
        data = self._data
        if type(data) is dict:
            return _fields_of(data, ids, fields)

        def read() -> list[dict[str, Any] | None]:
            many = len(ids) * FEW_IDS_SHARE > len(data)
            return _fields_of(data.copy() if many else {vid: data.get(vid) for vid in ids}, ids, fields)

        return await asyncio.to_thread(read)


FEW_IDS_SHARE = 8  # reading more than 1/8 of a manager's dict by id: one copy of it instead


def _fields_of(data: dict, ids: list[str], fields: tuple[str, ...]) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for vid in ids:
        record = data.get(vid)
        out.append({name: record.get(name) for name in fields if name in record} if record else None)
    return out
