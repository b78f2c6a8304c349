"""The insert path's batching pieces: MicroBatcher, the embedding cache, and group commit of storage flushes."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import time

import numpy as np
import pytest

from lightrag_prism.backends.embedding_cache import CachedEmbedding, embedding_cache_of, with_embedding_cache
from lightrag_prism.batcher import MicroBatcher
from lightrag_prism.insert.group_commit import CommitPolicy, GroupFlush
from tests.helpers import hash_embedding_func

pytestmark = pytest.mark.asyncio


async def test_concurrent_submissions_share_one_batch_and_keep_their_order():
    batches = []

    def double(items):
        batches.append(list(items))
        return [2 * x for x in items]

    batcher = MicroBatcher(double, max_batch=4)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(10)))
    assert results == [2 * i for i in range(10)]
    assert [len(b) for b in batches] == [4, 4, 2]  # same-turn requests batched, capped at max_batch
    assert await batcher.submit(7) == 14 and batches[-1] == [7]  # a lone request waits for nothing


async def test_a_failing_batch_fails_its_waiters_only():
    async def maybe_fail(items):
        if "bad" in items:
            raise ValueError("boom")
        return [x.upper() for x in items]

    batcher = MicroBatcher(maybe_fail)
    with pytest.raises(ValueError, match="boom"):
        await asyncio.gather(batcher.submit("a"), batcher.submit("bad"))
    assert await batcher.submit("ok") == "OK"


class CountingInner:
    def __init__(self, delay: float = 0.0):
        self.calls: list[list[str]] = []
        self.delay = delay

    async def __call__(self, texts, **kwargs):
        self.calls.append(list(texts))
        await asyncio.sleep(self.delay)
        return np.asarray([[float(len(t)), float(kwargs.get("context") == "document")] for t in texts])


async def test_embedding_cache_embeds_each_text_once_per_kwargs():
    inner = CountingInner()
    cached = CachedEmbedding(inner, max_entries=100)
    first = await cached(["alpha", "beta", "alpha"])
    second = await cached(["beta", "gamma"])
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second[0], first[1])
    assert inner.calls == [["alpha", "beta"], ["gamma"]]
    await cached(["alpha"], context="document")  # LightRAG's default context: the same vectors as no context
    assert inner.calls[-1] == ["gamma"] and (cached.hits, cached.misses) == (2, 3)
    await cached(["alpha"], context="query")  # other kwargs, other vectors
    assert inner.calls[-1] == ["alpha"] and (cached.hits, cached.misses) == (2, 4)


async def test_embedding_cache_awaits_texts_in_flight_and_evicts_lru():
    inner = CountingInner(delay=0.05)
    cached = CachedEmbedding(inner, max_entries=2)
    a, b = await asyncio.gather(cached(["x", "y"]), cached(["y", "z"]))
    assert inner.calls == [["x", "y"], ["z"]]  # "y" was awaited, not embedded twice
    np.testing.assert_array_equal(a[1], b[0])
    await cached(["x"])  # evicted: only two vectors are kept
    assert inner.calls[-1] == ["x"]


async def test_with_embedding_cache_keeps_the_embedding_func_contract():
    func = hash_embedding_func(16)
    wrapped = with_embedding_cache(func, 10)
    assert with_embedding_cache(wrapped, 10) is wrapped and with_embedding_cache(func, 0) is func
    vectors = await wrapped(["one", "two"])
    np.testing.assert_allclose(vectors, await func(["one", "two"]))
    assert wrapped.embedding_dim == func.embedding_dim


async def test_the_cache_is_found_through_lightrags_wrapper_and_cleared():
    from dataclasses import replace

    from lightrag.utils import priority_limit_async_func_call

    inner = CountingInner()
    func = with_embedding_cache(replace(hash_embedding_func(2), func=inner), 10)
    # as LightRAG's __post_init__ wraps it
    wrapped = replace(func, func=priority_limit_async_func_call(2, concurrency_group="embedding")(func.func))
    cache = embedding_cache_of(wrapped)
    assert cache is func.func and embedding_cache_of(hash_embedding_func(2)) is None
    await wrapped(["alpha"])
    await wrapped(["alpha"])
    assert inner.calls == [["alpha"]]
    cache.clear()
    await wrapped(["alpha"])
    assert inner.calls == [["alpha"], ["alpha"]]


class SlowStore:
    def __init__(self, seconds: float = 0.02, fail: bool = False):
        self.seconds, self.fail, self.flushes = seconds, fail, 0
        self.writes: list[int] = []  # number of writes each flush saw
        self.pending = 0
        self.spans: list[tuple[float, float]] = []  # (start, end) of each flush, on the pacing clock

    async def flush(self):
        self.flushes += 1
        seen = self.pending
        start = time.monotonic()
        await asyncio.sleep(self.seconds)
        self.spans.append((start, time.monotonic()))
        if self.fail:
            raise OSError("disk full")
        self.writes.append(seen)
        return seen


@pytest.fixture
def no_gc_pauses():
    """A collection pass in a big test process can pause for tens of milliseconds (650 ms measured with torch and
    LightRAG loaded): keep it out of the timed steps of the flush tests below."""
    enabled = gc.isenabled()
    gc.disable()
    yield
    if enabled:
        gc.enable()


async def test_group_flush_coalesces_callers_and_waits_for_a_flush_started_after_the_call(no_gc_pauses):
    store = SlowStore()
    group = GroupFlush(store.flush)
    store.pending = 1
    first = asyncio.ensure_future(group())
    await asyncio.sleep(0.005)  # first flush running
    store.pending = 2
    later = [asyncio.ensure_future(group()) for _ in range(5)]
    results = await asyncio.gather(first, *later)
    assert store.flushes == 2  # six callers, two flushes
    assert results[0] == 1 and all(r == 2 for r in results[1:])  # the late callers saw their writes flushed
    assert (group.calls, group.flushes) == (6, 2)


async def test_group_flush_errors_reach_every_caller_of_that_flush():
    group = GroupFlush(SlowStore(fail=True).flush)
    results = await asyncio.gather(group(), group(), return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results)


async def test_bulk_runs_pace_every_store_by_the_flush_time_of_all_and_single_runs_are_not_delayed(no_gc_pauses):
    policy = CommitPolicy(pace=2.0, min_gap=0.0)
    small, big = SlowStore(seconds=0.005), SlowStore(seconds=0.02)
    small_group, big_group = GroupFlush(small.flush, policy), GroupFlush(big.flush, policy)
    await small_group()
    await big_group()  # one after the other: 0.025 s of flushing in all
    called = time.monotonic()
    await small_group()  # outside a bulk run: no round to wait for
    assert small.spans[-1][0] - called < 0.02
    with policy.bulk():
        assert policy.round_seconds() == pytest.approx(2.0 * 0.025, abs=0.01)
        await small_group()
        # The big store's flush time paces the small store too. Measured from the small store's previous flush,
        # which is what the round counts from (a call made later than a round after it need not wait at all).
        assert small.spans[-1][0] - small.spans[-2][1] >= 0.045
    with policy.bulk(active=False):
        assert policy.round_seconds() == 0.0


async def test_flushes_that_overlap_count_once_in_the_round(no_gc_pauses):
    """Flushes queued on LightRAG's one storage thread overlap in time: each one's duration includes the wait behind
    the others, so the round is paced by their union, not by the sum of their durations."""
    policy = CommitPolicy(pace=1.0, min_gap=0.0)
    groups = [GroupFlush(SlowStore(seconds=0.03).flush, policy) for _ in range(4)]
    await asyncio.gather(*(group() for group in groups))  # four flushes running together for 0.03 s
    with policy.bulk():
        assert policy.round_seconds() == pytest.approx(0.03, abs=0.015)  # the sum would be 0.12


async def test_bulk_runs_flush_a_small_store_at_most_once_per_min_gap(no_gc_pauses):
    policy = CommitPolicy(pace=0.0, min_gap=0.05)
    store = SlowStore(seconds=0.001)
    group = GroupFlush(store.flush, policy)
    loop = asyncio.get_running_loop()
    with policy.bulk():
        start = loop.time()
        while loop.time() - start < 0.3:
            await asyncio.gather(*(group() for _ in range(3)))
    assert store.flushes <= 8 and group.calls >= 3 * store.flushes  # ~one per 50 ms (the first at once)
    with pytest.raises(ValueError):
        CommitPolicy(pace=-1)


async def test_a_paced_wait_ends_at_the_first_idle_probe_and_lasts_while_anything_is_busy(no_gc_pauses):
    """The round of a bulk run is cut short when the process is idle and nothing is in flight: every document then
    waits for a flush, and the rest of the round would only have been waited out."""
    from lightrag_prism.insert.group_commit import IDLE_PROBE

    in_flight = [False]
    policy = CommitPolicy(busy=lambda: in_flight[0])
    loop = asyncio.get_running_loop()
    start = loop.time()
    await policy.wait(5.0)
    assert loop.time() - start < 2 * IDLE_PROBE  # idle: one probe

    in_flight[0] = True  # an LLM answer or vectors awaited: the round is waited out
    start = loop.time()
    await policy.wait(3 * IDLE_PROBE)
    assert loop.time() - start >= 3 * IDLE_PROBE - 0.01

    in_flight[0] = False
    stop = threading.Event()

    def spin():  # document work of this process (extraction, a flush on LightRAG's storage thread)
        while not stop.is_set():
            sum(range(1000))

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        start = loop.time()
        await policy.wait(3 * IDLE_PROBE)
        assert loop.time() - start >= 3 * IDLE_PROBE - 0.01
    finally:
        stop.set()
        worker.join()


async def test_an_idle_bulk_flush_does_not_wait_out_its_round(no_gc_pauses):
    policy = CommitPolicy(pace=1000.0, min_gap=0.0)  # rounds of 1000 x the last flush: seconds
    store = SlowStore(seconds=0.01)
    group = GroupFlush(store.flush, policy)
    await group()
    with policy.bulk():
        assert policy.round_seconds() > 5
        called = time.monotonic()
        await group()
    assert store.spans[-1][0] - called < 1.0


async def test_calls_in_flight_counts_running_calls_and_keeps_the_functions_marks():
    from lightrag_prism.insert.group_commit import CallsInFlight

    calls, release = CallsInFlight(), asyncio.Event()

    async def llm(prompt, history_messages=None):
        await release.wait()
        return prompt.upper()

    llm.is_offline_stand_in = True
    wrapped = calls.wrap(llm)
    assert wrapped.is_offline_stand_in and "history_messages" in inspect.signature(wrapped).parameters
    running = [asyncio.ensure_future(wrapped("a")), asyncio.ensure_future(wrapped("b"))]
    await asyncio.sleep(0)
    assert calls.count == 2
    release.set()
    assert await asyncio.gather(*running) == ["A", "B"] and calls.count == 0


async def test_covered_seconds_is_the_union_of_overlapping_intervals():
    from lightrag_prism.insert.group_commit import covered_seconds

    assert covered_seconds([]) == 0.0
    assert covered_seconds([(0.0, 1.0), (0.5, 1.5), (3.0, 4.0), (3.2, 3.4)]) == pytest.approx(2.5)


async def test_embedding_waits_inside_a_flush_do_not_pace_the_others(tmp_path):
    """A vector store whose flush waits for vectors records only its own work, so the round stays short."""
    from dataclasses import replace

    from lightrag_prism import PrismRAG

    fast = hash_embedding_func(16)

    async def slow_embed(texts, **kwargs):
        await asyncio.sleep(0.2)
        return await fast.func(texts)

    rag = PrismRAG(working_dir=str(tmp_path), embedding_func=replace(fast, func=slow_embed),
                   embedding_cache_size=0, prepare_query_indexes=False)  # no prefetch: the flush embeds
    await rag.initialize_storages()
    try:
        await rag.ainsert("Marie Curie was born in Warsaw.")
        entities = rag.prism_seam.flushes["entities"]
        assert entities.flush_seconds >= 0.2  # the flush did wait for its vectors ...
        start, end = rag.prism_seam.commit_policy._latest[id(entities)]
        own_work = end - start
        assert own_work < 0.1  # ... which does not count as the storage's work
    finally:
        await rag.finalize_storages()
