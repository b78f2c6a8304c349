"""insert/prefetch.py: vector-store content and query-index items embedded in the background, in batches."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from lightrag_prism.backends.embedding_cache import CachedEmbedding
from lightrag_prism.insert.prefetch import EmbeddingPrefetch

pytestmark = pytest.mark.asyncio


class Recorder:
    def __init__(self, fail: bool = False):
        self.calls: list[list[str]] = []
        self.fail = fail

    async def __call__(self, texts, **kwargs):
        self.calls.append(list(texts))
        if self.fail:
            raise RuntimeError("embedder down")
        return np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)


class FakeIndex:
    def __init__(self):
        self.staged: dict[str, np.ndarray] = {}

    def stage(self, ids, vectors):
        self.staged.update(zip(ids, np.asarray(vectors)))


async def drained(prefetch: EmbeddingPrefetch) -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await prefetch.close()


async def test_latest_content_per_row_is_embedded_once_and_cached_for_the_flush():
    inner = Recorder()
    cached = CachedEmbedding(inner, max_entries=100)
    prefetch = EmbeddingPrefetch(cached, max_request=2)
    prefetch.add("entities", {"e1": {"content": "old text"}, "e2": {"content": "beta"}, "e3": {"other": 1}})
    prefetch.add("entities", {"e1": {"content": "new text"}})  # replaces the queued "old text"
    await drained(prefetch)
    assert sorted(t for call in inner.calls for t in call) == ["beta", "new text"]
    assert all(len(call) <= 2 for call in inner.calls)
    calls = len(inner.calls)
    await cached(["new text", "beta"], context="document")  # what the flush asks for: served from the cache
    assert len(inner.calls) == calls and (cached.hits, cached.misses) == (2, 2)


async def test_index_items_are_embedded_and_staged_in_their_index():
    inner = Recorder()
    prefetch = EmbeddingPrefetch(inner)
    names, facts = FakeIndex(), FakeIndex()
    prefetch.add_index_items([(names, "Alice", "Alice"), (facts, "f1", "Alice born in Paris"),
                              (names, "Alice", "Alice")])
    await drained(prefetch)
    assert inner.calls == [["Alice", "Alice born in Paris"]]
    assert list(names.staged) == ["Alice"] and list(facts.staged) == ["f1"]
    np.testing.assert_array_equal(facts.staged["f1"], [len("Alice born in Paris"), 1.0])


async def test_a_failing_prefetch_is_only_logged(caplog):
    prefetch = EmbeddingPrefetch(Recorder(fail=True))
    index = FakeIndex()
    prefetch.add_index_items([(index, "x", "text")])
    await drained(prefetch)
    assert index.staged == {}  # nothing staged: the index's sync embeds it later



async def test_closing_from_another_loop_than_the_one_a_sync_wrapper_ran_it_on():
    """LightRAG's sync ``insert`` runs its own loop; ``asyncio.run(rag.finalize_storages())`` then closes the
    prefetch from a new loop, where the idle loop's task cannot be awaited ("attached to a different loop"): the
    request in flight ends on its own loop."""
    reply = None
    embedded = []

    async def slow(texts, **kwargs):
        await reply  # the request in flight when the sync call's loop stopped
        embedded.extend(texts)
        return np.zeros((len(texts), 2), dtype=np.float32)

    prefetch = EmbeddingPrefetch(slow)
    other = asyncio.new_event_loop()

    async def start():
        nonlocal reply
        reply = other.create_future()
        prefetch.add("entities", {"e1": {"content": "text"}})
        for _ in range(5):
            await asyncio.sleep(0)
        other.call_soon(reply.set_result, None)  # answered once the loop runs again

    thread = threading.Thread(target=other.run_until_complete, args=(start(),))  # this thread's loop is running
    thread.start()
    thread.join()
    assert prefetch._task is not None and not prefetch._task.done()
    await asyncio.wait_for(prefetch.close(), timeout=5)
    assert prefetch._task.done() and not prefetch._task.cancelled() and embedded == ["text"]
    other.close()
