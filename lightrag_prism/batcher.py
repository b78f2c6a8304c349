"""Batch concurrent async requests into calls of one batch function (blocking ones run in a worker thread).

LightRAG extracts and embeds through many small concurrent calls. :class:`MicroBatcher` turns them into few big
ones (``nlp.pipe`` batches, embedding requests) without any timer: the first request starts a batch after one loop
turn (so requests made in the same turn join it), and whatever arrives while a batch runs forms the next one. Under
load batches grow up to ``max_batch``; a lone request waits for nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from typing import Any, Callable, Hashable


class MicroBatcher:
    """``await submit(item)``; ``batch_fn(items) -> results`` (same order), sync (run in a thread) or async."""

    def __init__(self, batch_fn: Callable[[list[Any]], Any], max_batch: int = 256):
        self.batch_fn = batch_fn
        self._is_async = inspect.iscoroutinefunction(batch_fn)
        self.max_batch = max_batch
        self._queue: list[tuple[Any, asyncio.Future]] = []
        self._runner: asyncio.Task | None = None
        self.batch_sizes: list[int] = []  # observed sizes (tests, benchmarks)

    async def submit(self, item: Any) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.append((item, future))
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(0)
        while self._queue:
            batch, self._queue = self._queue[:self.max_batch], self._queue[self.max_batch:]
            self.batch_sizes.append(len(batch))
            try:
                items = [item for item, _ in batch]
                results = await (self.batch_fn(items) if self._is_async else asyncio.to_thread(self.batch_fn, items))
                if len(results) != len(batch):
                    raise RuntimeError(f"batch function returned {len(results)} results for {len(batch)} items")
            except Exception as exc:  # noqa: BLE001 - every waiter gets the error, the next batch still runs
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)


# A batcher's futures belong to one event loop, so each loop gets its own (tests and sync wrappers run several).
_per_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, MicroBatcher]]" = \
    weakref.WeakKeyDictionary()


def loop_batcher(key: Hashable, make_batch_fn: Callable[[], Callable[[list[Any]], Any]],
                 max_batch: int = 256) -> MicroBatcher:
    """The running loop's :class:`MicroBatcher` for ``key``, made with ``make_batch_fn()`` on first use."""
    batchers = _per_loop.setdefault(asyncio.get_running_loop(), {})
    if key not in batchers:
        batchers[key] = MicroBatcher(make_batch_fn(), max_batch=max_batch)
    return batchers[key]
