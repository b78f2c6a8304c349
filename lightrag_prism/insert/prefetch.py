"""Embed what an insert will need as soon as it is upserted, in the background and in batches.

LightRAG's vector stores embed at flush time. With group commit a flush covers many documents, so its embedding
pass would be long and would hold the flush (and the documents waiting on it). :class:`EmbeddingPrefetch` watches
the upserts of an instance's vector stores and embeds right away, through the instance's ``EmbeddingFunc``:

* **store content** (the ``content`` field LightRAG will embed): the
  :class:`~lightrag_prism.backends.embedding_cache.CachedEmbedding` inside the ``EmbeddingFunc`` keeps the vectors,
  so the flush finds them cached. Only the latest content per (store, id) waiting in the queue is embedded: a hub
  entity updated by ten documents in a row is embedded once.
* **query-index items** (optional ``index_items`` callback, see ``retrievers/views/query_state.py``): entity names and
  fact texts for the hipporag/prism indexes, staged in those indexes (``EmbeddingIndex.stage``).

Store content goes first (a flush waits for it); each call embeds up to :data:`MAX_REQUEST` texts, which the model
splits into batches of similar length. A failed prefetch is only logged: the flush (or the index's ``sync``) embeds
those texts itself, as it would have without prefetching.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable

from lightrag.base import BaseVectorStorage

from ..background import wait_for_tasks
from .group_commit import storages_of

logger = logging.getLogger(__name__)

MAX_REQUEST = 512  # texts per embedding call: the model sorts them by length, so long and short pad apart

IndexItems = Callable[[BaseVectorStorage, dict], Iterable[tuple[object, str, str]]]


class EmbeddingPrefetch:
    def __init__(self, embedding_func, max_request: int = MAX_REQUEST):
        self.embedding_func = embedding_func
        self.max_request = max(1, max_request)
        self._content: dict[tuple[str, str], str] = {}  # (namespace, row id) -> latest content
        self._index: dict[tuple[object, str], str] = {}  # (index, id) -> text
        self._task: asyncio.Task | None = None
        self.embedded = 0

    def add(self, namespace: str, data: dict) -> None:
        for row_id, record in data.items():
            content = record.get("content") if isinstance(record, dict) else None
            if isinstance(content, str) and content:
                self._content.pop((namespace, row_id), None)  # re-queue at the end with the latest content
                self._content[(namespace, row_id)] = content
        self._start()

    def add_index_items(self, items: Iterable[tuple[object, str, str]]) -> None:
        for index, item_id, text in items:
            self._index.setdefault((index, item_id), text)
        self._start()

    def _start(self) -> None:
        if (self._content or self._index) and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        await asyncio.sleep(0)
        while self._content or self._index:
            queue = self._content or self._index
            keys = list(queue)[:self.max_request]
            texts = [queue.pop(key) for key in keys]
            try:
                if queue is self._content:
                    await self.embedding_func(texts, context="document")
                else:
                    await self._stage(keys, texts)
                self.embedded += len(texts)
            except Exception as exc:  # noqa: BLE001 - the flush / the index sync embeds these itself
                logger.debug("embedding prefetch failed (embedded later instead): %s", exc)

    async def _stage(self, keys: list[tuple[object, str]], texts: list[str]) -> None:
        vectors = await self.embedding_func(texts)  # as the indexes' sync calls it (no keyword arguments)
        by_index: dict[int, tuple[object, list[str], list[int]]] = {}
        for row, (index, item_id) in enumerate(keys):
            by_index.setdefault(id(index), (index, [], []))[1].append(item_id)
            by_index[id(index)][2].append(row)
        for index, ids, rows in by_index.values():
            index.stage(ids, vectors[rows])

    async def close(self) -> None:
        """Drop what is queued and wait for the request in flight: cancelling it would leave the call running in
        LightRAG's embedding queue after the instance is finalised."""
        self._content.clear()
        self._index.clear()
        if self._task is not None:  # on the loop of the call that queued it (a sync method's own, see background.py)
            await wait_for_tasks([self._task])


def install_prefetch(rag, index_items: IndexItems | None = None, content: bool = True) -> EmbeddingPrefetch:
    """Wrap the ``upsert`` of every vector store of ``rag`` (once) to feed one :class:`EmbeddingPrefetch`:
    store content when ``content`` (pointless without an embedding cache), and the (index, id, text) triples
    ``index_items(storage, data)`` returns."""
    prefetch = EmbeddingPrefetch(rag.embedding_func)
    for storage in storages_of(rag):
        if not isinstance(storage, BaseVectorStorage) or "upsert" in storage.__dict__:
            continue
        original = storage.upsert

        async def upsert(data, _original=original, _storage=storage):
            result = await _original(data)
            if content:
                prefetch.add(_storage.namespace, data)
            if index_items is not None:
                prefetch.add_index_items(index_items(_storage, data))
            return result

        storage.upsert = upsert
    return prefetch
