"""A text -> vector cache inside an ``EmbeddingFunc``: the same text is never embedded twice.

LightRAG's vector stores embed at flush time every row upserted since the last flush, including entities whose
content did not change (a hub touched again by a new document). :class:`CachedEmbedding` wraps the embedding
function's inner callable: texts already embedded (under the same keyword arguments, e.g. ``context``) come from
an LRU of ``max_entries`` vectors, texts being embedded by a concurrent call are awaited rather than embedded
again, and the rest go to the model in one call. It also lets the insert path compute vectors before the flush
(``insert/prefetch.py``), off the flush's critical path.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from dataclasses import replace

import numpy as np


def _key(text: str, kwargs: dict) -> str:
    # A call without ``context`` embeds as a document (LightRAG's default): the two share their vectors.
    if kwargs.get("context") == "document":
        kwargs = {k: v for k, v in kwargs.items() if k != "context"}
    flavour = repr(sorted(kwargs.items())) if kwargs else ""
    return hashlib.md5(f"{flavour}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedding:
    """``await cached(texts, **kwargs)`` like the wrapped function, with an LRU of vectors."""

    def __init__(self, func, max_entries: int):
        self.func = func
        # EmbeddingFunc passes ``max_token_size`` only if the inner function's signature has it; inspect.signature
        # follows __wrapped__, so it still sees the wrapped function's parameters.
        self.__wrapped__ = func
        self.max_entries = max_entries
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._inflight: dict[str, asyncio.Future] = {}
        self.hits = 0
        self.misses = 0

    def __deepcopy__(self, memo):  # LightRAG deep-copies its config on every call: share, don't copy
        return self

    @property
    def in_flight(self) -> int:
        """Texts being embedded right now."""
        return len(self._inflight)

    def clear(self) -> None:
        """Forget every vector (calls in flight still complete)."""
        self._vectors.clear()

    def _store(self, key: str, vector: np.ndarray) -> None:
        self._vectors[key] = vector
        self._vectors.move_to_end(key)
        while len(self._vectors) > self.max_entries:
            self._vectors.popitem(last=False)

    async def __call__(self, texts, *args, **kwargs):
        texts = list(texts)
        keys = [_key(t, kwargs) for t in texts]
        found: dict[str, np.ndarray] = {}
        waiting: dict[str, asyncio.Future] = {}
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key in found or key in waiting or key in todo:
                continue
            if key in self._vectors:
                self._vectors.move_to_end(key)
                found[key] = self._vectors[key]
            elif key in self._inflight:
                waiting[key] = self._inflight[key]
            else:
                todo[key] = text
        self.hits += len(found) + len(waiting)
        self.misses += len(todo)
        if todo:
            found.update(await self._embed(todo, args, kwargs))
        for key, future in waiting.items():
            found[key] = await asyncio.shield(future)
        return np.stack([found[k] for k in keys]) if keys else np.asarray(await self.func([], *args, **kwargs))

    async def _embed(self, todo: dict[str, str], args, kwargs) -> dict[str, np.ndarray]:
        loop = asyncio.get_running_loop()
        futures = {key: loop.create_future() for key in todo}
        self._inflight.update(futures)
        try:
            vectors = np.asarray(await self.func(list(todo.values()), *args, **kwargs), dtype=np.float32)
            if len(vectors) != len(todo):
                raise RuntimeError(f"embedding returned {len(vectors)} vectors for {len(todo)} texts")
        except BaseException as exc:
            for future in futures.values():
                if not future.done():
                    future.set_exception(exc)
                    future.exception()  # mark retrieved: waiters may be gone
            raise
        finally:
            for key in futures:
                self._inflight.pop(key, None)
        result = {}
        for key, vector in zip(todo, vectors):
            self._store(key, vector)
            futures[key].set_result(vector)
            result[key] = vector
        return result


def with_embedding_cache(embedding_func, max_entries: int):
    """The same ``EmbeddingFunc`` with its inner function behind a :class:`CachedEmbedding` (idempotent)."""
    if max_entries <= 0 or isinstance(getattr(embedding_func, "func", None), CachedEmbedding):
        return embedding_func
    return replace(embedding_func, func=CachedEmbedding(embedding_func.func, max_entries))


def embedding_cache_of(embedding_func) -> CachedEmbedding | None:
    """The :class:`CachedEmbedding` inside ``embedding_func`` (also through LightRAG's wrappers), or None."""
    func = getattr(embedding_func, "func", None)
    while func is not None and not isinstance(func, CachedEmbedding):
        func = getattr(func, "__wrapped__", None)
    return func
