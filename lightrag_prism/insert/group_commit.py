"""Group commit: one storage flush serves every caller that asked for it while the previous flush ran.

LightRAG persists by calling each storage's public ``index_done_callback()``: after every document (all twelve
storages), before every graph mutation (the recovery anchors) and on every document-status change (about nine
times per document). The file backends rewrite the whole file each time, so the cost of one document grows with
the size of the stores and an insert of N documents costs O(N^2).

:class:`GroupFlush` replaces a storage instance's ``index_done_callback`` with a coalescing one. A call returns
after a flush of that storage that *started after the call* has completed, which is exactly the guarantee
LightRAG's callers rely on (every write they made before the call is durable when it returns; they make dependent
writes only afterwards). While one flush runs, new callers share the next one, which starts as soon as it ends.
A lone caller waits for nothing.

**Pacing.** Coalescing alone is not enough: the file backends hold their storage lock (and, writing XML or JSON,
much of the GIL) for the whole write, so flushes run back to back would leave documents no time to reach the next
one, and each flush would serve one document. While a pipeline run keeps many documents in flight
(:meth:`CommitPolicy.bulk`), each storage flushes at most once per *round* of ``max(min_gap, pace x S)`` seconds,
where ``S`` is the time the latest flushes of all the instance's storages took together (the union of their
intervals: they queue on LightRAG's one storage thread, so summing their durations counted the queueing many times
over, and rounds of a 9,000-passage index stretched to minutes with every core idle). So:

* all flushes together take at most ``1 / pace`` of the time, whatever the stores' sizes (pacing each store by its
  own duration bounds each store, not their sum: twelve stores each flushing a fifth of the time saturated the
  storage thread);
* a vector store's flush first embeds the rows upserted since the last one (mostly served by the embedding cache
  that ``prefetch.py`` fills, but it may wait for vectors in flight): that wait is the embedder's work, not the
  storage's, so it is left out of the duration (:func:`measure_embedding_waits`); one slow embedding must not
  stretch every round;
* as the stores grow, rounds get longer and each flush covers proportionally more documents, so the flush cost per
  document stays flat;
* a document waits up to one round per flush it needs (about seven), which the hundreds of documents in flight of
  an offline insert absorb. With few documents in flight (fewer than :data:`PACED_MIN_PARALLEL` documents to
  process, or an LLM-bound insert with ``max_parallel_insert`` below it) that latency would cost throughput (a
  10-document insert into a 3,000-passage index waited two minutes), so only coalescing applies there, as it does
  for a call outside a run.

**An idle round ends early.** A round makes room for document work; when there is none (every document in flight
waits for a flush, as at the end of each run) its wait is dead time: measured on the pooled 9,002-passage build, the
whole process tree sat idle for 120 to 210 s (10-15% of the build) in such waits. So a paced wait is cut short once a
probe (every :data:`IDLE_PROBE` seconds) finds this process using under :data:`IDLE_CPU_SHARE` of a core and
nothing in flight outside it (``CommitPolicy.busy``: LLM calls, embeddings; PrismRAG's own instances count both),
where the rest of the round could only have waited.

Flush errors reach every caller of that flush, as LightRAG expects (it wraps them in ``IndexFlushError``).
Only storages of a PrismRAG instance are wrapped (:func:`install_group_commit`); plain LightRAG is unaffected.
"""

from __future__ import annotations

import asyncio
import functools
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Awaitable, Callable, Iterator

from lightrag.base import BaseVectorStorage, StorageNameSpace

#: (start, end) of every embedding call a flush makes, collected while that flush runs (see GroupFlush._drive)
EMBEDDING_WAITS: ContextVar[list[tuple[float, float]] | None] = ContextVar("prism_embedding_waits", default=None)

DEFAULT_PACE = 4.0
DEFAULT_MIN_GAP = 0.1  # seconds
IDLE_PROBE = 0.25  # seconds between the idle checks of a paced wait
IDLE_CPU_SHARE = 0.1  # this process's CPU seconds per wall second below which it counts as idle
PACED_MIN_PARALLEL = 16  # documents in flight below which pacing costs more throughput than it saves


class CommitPolicy:
    """Per-instance pacing shared by its storages' :class:`GroupFlush` objects (see the module doc)."""

    def __init__(self, pace: float = DEFAULT_PACE, min_gap: float = DEFAULT_MIN_GAP,
                 busy: Callable[[], bool] | None = None):
        if pace < 0 or min_gap < 0:
            raise ValueError(f"pace and min_gap must be >= 0, got {pace}, {min_gap}")
        self.pace, self.min_gap = pace, min_gap
        self.busy = busy or (lambda: False)  # work in flight outside this process's CPU (LLM calls, embeddings)
        self._bulk_runs = 0
        self._latest: dict[int, tuple[float, float]] = {}  # (start, end) of each GroupFlush's latest flush

    @contextmanager
    def bulk(self, active: bool = True) -> Iterator[None]:
        """Pace flushes while this block runs (when ``active``: a run with many documents in flight)."""
        self._bulk_runs += int(active)
        try:
            yield
        finally:
            self._bulk_runs -= int(active)

    def record(self, group: "GroupFlush", end: float, work: float) -> None:
        """``group``'s latest flush ended at ``end`` after ``work`` seconds of its own (embedding waits excluded)."""
        self._latest[id(group)] = (end - work, end)

    async def wait(self, seconds: float) -> None:
        """Sleep out ``seconds`` of a round, or less: a probe that finds the process idle and nothing ``busy``
        ends the wait (see "An idle round ends early")."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            step = min(left, IDLE_PROBE)
            cpu = time.process_time()  # every thread of the process: the storage thread's flushes, extraction
            await asyncio.sleep(step)
            if time.process_time() - cpu < IDLE_CPU_SHARE * step and not self.busy():
                return

    def round_seconds(self) -> float:
        """How long a storage waits after its previous flush ended before the next (0 outside bulk runs): ``pace``
        times the time the latest flushes took together. Their union, not their sum: the storages' flushes queue on
        LightRAG's one storage thread, so each flush's own duration includes the others' it waited behind."""
        return max(self.min_gap, self.pace * covered_seconds(list(self._latest.values()))) if self._bulk_runs \
            else 0.0


class GroupFlush:
    """Coalescing (and, in bulk runs, paced) replacement for one storage's ``index_done_callback``."""

    def __init__(self, flush: Callable[[], Awaitable[Any]], policy: CommitPolicy | None = None):
        self.flush = flush  # the storage's own bound index_done_callback
        self.policy = policy or CommitPolicy()
        self._next: asyncio.Future | None = None  # shared by the callers of the flush that has not started yet
        self._driver: asyncio.Task | None = None
        self._last_end = 0.0
        self.calls = 0
        self.flushes = 0
        self.flush_seconds = 0.0

    async def __call__(self) -> Any:
        self.calls += 1
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
            self._next.add_done_callback(_retrieve)
        waiter = self._next
        if self._driver is None or self._driver.done():
            self._driver = loop.create_task(self._drive())
        # A cancelled caller must not cancel the flush other callers share.
        return await asyncio.shield(waiter)

    async def _drive(self) -> None:
        while self._next is not None:
            delay = self._last_end + self.policy.round_seconds() - time.monotonic()
            if delay > 0:
                await self.policy.wait(delay)  # callers arriving meanwhile join this flush
            waiter, self._next = self._next, None  # callers arriving from now on wait for the next flush
            self.flushes += 1
            waits: list[tuple[float, float]] = []
            token = EMBEDDING_WAITS.set(waits)
            start = time.monotonic()
            try:
                result = await self.flush()
            except asyncio.CancelledError:
                waiter.cancel()
                raise
            except Exception as exc:  # noqa: BLE001 - handed to every caller of this flush
                waiter.set_exception(exc)
            else:
                waiter.set_result(result)
            finally:
                EMBEDDING_WAITS.reset(token)
                self._last_end = time.monotonic()
                self.policy.record(self, self._last_end, self._last_end - start - covered_seconds(waits))
                self.flush_seconds += self._last_end - start


class CallsInFlight:
    """How many calls of the async functions it wrapped are running (an LLM's answers the process waits for)."""

    def __init__(self) -> None:
        self.count = 0

    def wrap(self, func: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(func)  # keeps the function's attributes (the offline stand-in's marks) and signature
        async def call(*args, **kwargs):
            self.count += 1
            try:
                return await func(*args, **kwargs)
            finally:
                self.count -= 1

        return call


def covered_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``intervals`` (concurrent embedding calls overlap)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def measure_embedding_waits(storage: BaseVectorStorage) -> None:
    """Make ``storage``'s embedding calls report their (start, end) to the flush that makes them, if any."""
    inner = storage.embedding_func.func
    if getattr(inner, "_prism_measured", False):
        return

    async def measured(*args, **kwargs):
        waits = EMBEDDING_WAITS.get()
        start = time.monotonic()
        try:
            return await inner(*args, **kwargs)
        finally:
            if waits is not None:
                waits.append((start, time.monotonic()))

    measured._prism_measured = True
    measured.__wrapped__ = inner  # EmbeddingFunc inspects the signature (max_token_size) through it
    storage.embedding_func = replace(storage.embedding_func, func=measured)


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # callers that were cancelled never read it: no "never retrieved" warning


def storages_of(rag) -> list[StorageNameSpace]:
    """The storage instances of ``rag`` (public attributes: KV, vector, graph, doc status)."""
    return [value for value in vars(rag).values() if isinstance(value, StorageNameSpace)]


def install_group_commit(rag, policy: CommitPolicy) -> dict[str, GroupFlush]:
    """Wrap every storage of ``rag`` once; returns namespace -> its :class:`GroupFlush` (counters)."""
    installed = {}
    for storage in storages_of(rag):
        current = storage.__dict__.get("index_done_callback")
        if not isinstance(current, GroupFlush):
            current = GroupFlush(storage.index_done_callback, policy)
            storage.index_done_callback = current
            if isinstance(storage, BaseVectorStorage) and storage.embedding_func is not None:
                measure_embedding_waits(storage)
        installed[getattr(storage, "namespace", type(storage).__name__)] = current
    return installed
