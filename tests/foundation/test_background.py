"""background.py: a task is stopped for sure, even when Python 3.11's ``asyncio.wait_for`` drops its cancellation
(as redis-py's socket writes do); the version watcher and the insert progress bar stop through it."""

from __future__ import annotations

import asyncio
import sys
import threading
from types import SimpleNamespace

import pytest

from lightrag_prism import progress
from lightrag_prism.background import stop_task
from lightrag_prism.coordination import VersionWatcher
from tests.foundation.test_coordination import Store

pytestmark = pytest.mark.asyncio
LOSES_CANCELLATIONS = sys.version_info < (3, 12)  # CPython gh-86296


class Writes:
    """A loop of operations awaited through ``asyncio.wait_for``, as redis-py awaits each socket write; ``finish``
    completes the one in flight."""

    def __init__(self):
        self.pending: asyncio.Future | None = None
        self.done = 0

    async def one(self) -> None:
        self.pending = asyncio.get_running_loop().create_future()
        await asyncio.wait_for(self.pending, timeout=60)
        self.done += 1

    async def forever(self) -> None:
        while True:
            await self.one()

    def finish(self) -> None:
        self.pending.set_result(None)

    async def finish_then(self, stopping) -> object:
        """Complete the write in flight, then run ``stopping`` at once: its cancel lands as the write completes."""
        self.finish()
        return await stopping


async def started(coroutine) -> asyncio.Task:
    task = asyncio.get_running_loop().create_task(coroutine)
    await asyncio.sleep(0)  # it runs up to its first write
    return task


async def test_a_single_cancel_arriving_as_a_write_completes_is_lost_on_this_python():
    writes = Writes()
    task = await started(writes.forever())
    writes.finish()
    task.cancel()  # lands as the write completes: wait_for returns its result instead of raising
    await asyncio.wait({task}, timeout=0.3)
    assert task.done() is not LOSES_CANCELLATIONS  # the bug the module works around, where it exists
    task.cancel()  # a second cancel, while the next write waits, ends it
    await asyncio.wait({task}, timeout=1)
    assert task.cancelled()


async def test_stop_task_ends_a_task_whose_cancellation_is_lost():
    writes = Writes()
    task = await started(writes.forever())
    stopping = await started(writes.finish_then(stop_task(task)))  # its first cancel lands as above
    await asyncio.wait({stopping}, timeout=5)
    assert stopping.done() and stopping.result() is None
    assert task.cancelled() and writes.done == int(LOSES_CANCELLATIONS)  # the write the lost cancel let finish


async def test_stop_task_returns_the_tasks_own_failure_and_lets_the_callers_cancellation_through():
    async def fails():
        raise ConnectionRefusedError("server down")

    failing = await started(fails())
    assert isinstance(await stop_task(failing), ConnectionRefusedError)
    assert await stop_task(None) is None

    release = asyncio.Event()

    async def shielded():  # ends only when released, whatever cancels it
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                pass

    stubborn = await started(shielded())
    stopper = await started(stop_task(stubborn))
    stopper.cancel()
    await asyncio.wait({stopper}, timeout=1)
    assert stopper.cancelled() and not stubborn.done()  # the stopper's caller was not held hostage
    release.set()
    await asyncio.wait({stubborn}, timeout=1)


async def test_the_version_watcher_stops_when_the_cancel_of_its_version_read_is_lost():
    writes, state = Writes(), Store()

    async def refresh():
        pass

    watcher = VersionWatcher(state, refresh, interval=0.001)
    watcher.seen = ""

    async def check():  # the version read, over a Redis client that awaits its socket writes through wait_for
        await writes.one()
        return False

    watcher.check = check
    watcher.start()
    while writes.pending is None:
        await asyncio.sleep(0.001)
    task = watcher._task
    # Not wait_for(stop()): its timeout would cancel stop(), and that second cancel would reach the watcher.
    stopping = await started(writes.finish_then(watcher.stop()))
    await asyncio.wait({stopping}, timeout=5)
    ended = stopping.done()
    await stop_task(task)
    assert ended  # waited forever with a single cancel on Python 3.11
    assert watcher._task is None and task.cancelled()


async def test_the_insert_progress_bar_stops_polling_when_its_block_ends(monkeypatch):
    writes, reads = Writes(), []

    class DocStatus:  # counts read over a Redis client that awaits its socket writes through wait_for
        async def get_status_counts(self):
            reads.append(len(reads))
            if len(reads) > 1:  # the first read (before the block) answers at once
                await writes.one()
            return {"processed": 0}

    monkeypatch.setattr(progress, "POLL_SECONDS", 0.001)

    async def insert():
        async with progress.insert_progress(SimpleNamespace(doc_status=DocStatus()), 1, "test", disable=True):
            while writes.pending is None:  # the bar's poll waits on its read
                await asyncio.sleep(0.001)
            writes.finish()  # and the block ends as that read completes: the poll's cancel lands then

    stopping = await started(insert())
    await asyncio.wait({stopping}, timeout=5)
    ended = stopping.done()
    if not ended:  # let the test end: cancel the stuck block (and, through it, the poll)
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
    assert ended
    count = len(reads)
    await asyncio.sleep(0.05)
    assert len(reads) == count  # nothing polls after the block


class IdleLoop:
    """A loop that ran a sync method and now waits, not running, in no thread: LightRAG's ``insert`` leaves its
    tasks on such a loop (``start`` runs it a few steps in a thread, as a sync call runs it to its end)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()

    def start(self, coroutine) -> asyncio.Task:
        async def begin():
            task = asyncio.get_running_loop().create_task(coroutine)
            for _ in range(3):
                await asyncio.sleep(0)
            return task

        box = []
        thread = threading.Thread(target=lambda: box.append(self.loop.run_until_complete(begin())))
        thread.start()
        thread.join()
        return box[0]


async def test_stop_task_and_wait_for_tasks_end_the_tasks_of_an_idle_loop():
    from lightrag_prism.background import wait_for_tasks

    idle = IdleLoop()
    ticks = []

    async def forever():
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def finishes(release: asyncio.Event):
        await release.wait()
        return "done"

    looping = idle.start(forever())
    assert not looping.done()
    assert await asyncio.wait_for(stop_task(looping), timeout=5) is None  # it hung here: cancelled, never run
    assert looping.cancelled()

    release = []
    idle.start(_keep(release))
    finishing = idle.start(finishes(release[0]))
    idle.loop.call_soon(release[0].set)  # runs once the loop runs again
    await asyncio.wait_for(wait_for_tasks([finishing]), timeout=5)  # "attached to a different loop" before
    assert finishing.result() == "done"
    idle.loop.close()


async def test_the_tasks_of_a_closed_loop_are_skipped_not_waited_for():
    from lightrag_prism.background import wait_for_tasks

    idle = IdleLoop()
    stuck = idle.start(asyncio.sleep(3600))
    idle.loop.close()  # a loop closed under its tasks: they can never run again
    await asyncio.wait_for(wait_for_tasks([stuck]), timeout=5)
    assert await asyncio.wait_for(stop_task(stuck), timeout=5) is None
    assert not stuck.done()
    stuck._log_destroy_pending = False  # asyncio's "destroyed but it is pending" notice: the point of this test


async def _keep(box: list) -> None:
    box.append(asyncio.Event())  # made on the idle loop, where its waiter waits
