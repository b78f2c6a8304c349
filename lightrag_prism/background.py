"""Stopping a background task for sure, and waiting for tasks of any event loop.

Python 3.11's ``asyncio.wait_for`` drops a cancellation that arrives as the operation it waits for completes: it
returns the result, and the task goes on as if never cancelled (CPython gh-86296, fixed in 3.12). redis-py wraps
each socket write in ``wait_for`` when the client has a socket timeout, which LightRAG's Redis storages set. So
one ``cancel()`` of a loop that reads Redis can be lost, and whoever awaits the loop's end waits forever. Seen: a
replica's ``finalize_storages`` waited for its version watcher for good (in a probe, 12 of 599 cancellations of the
watcher's version read were lost).
"""

from __future__ import annotations

import asyncio

RECANCEL_SECONDS = 0.1  # how long a stopped task may run on before it is cancelled again


async def stop_task(task: asyncio.Task | None) -> BaseException | None:
    """Cancel ``task`` and wait until it has ended, cancelling it again while it runs on. Returns the exception it
    ended with, if any other than its cancellation (marked retrieved). The caller's own cancellation propagates."""
    if task is None:
        return None
    loop = task.get_loop()
    while not task.done():
        if loop.is_closed():  # it can never run again, so never end: nothing of it runs either
            return None
        task.cancel()
        if loop is asyncio.get_running_loop():
            await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
        else:  # another loop's task (a sync method's loop, see wait_for_tasks): its loop takes the cancellation
            await _on_loop(loop, asyncio.wait({task}, timeout=RECANCEL_SECONDS))
    return None if task.cancelled() else task.exception()


async def _on_loop(loop: asyncio.AbstractEventLoop, coro) -> None:
    """Run ``coro`` on ``loop``, not this one: in a worker thread when ``loop`` is idle, else where it runs."""
    if loop.is_running():
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
    else:
        await asyncio.to_thread(loop.run_until_complete, coro)


async def wait_for_tasks(tasks) -> None:
    """Wait until every one of ``tasks`` has ended (their exceptions are left to them), on whichever event loop it
    runs. A task of another loop cannot be awaited here ("attached to a different loop"): LightRAG's sync methods
    (``rag.insert``) run a loop of their own, so ``asyncio.run(rag.finalize_storages())`` meets the tasks they left
    behind on it. That loop is idle then, so it runs them to their end in a worker thread while this loop waits;
    a loop running in another thread gets them awaited there; a closed loop's tasks can never end and are skipped."""
    here = asyncio.get_running_loop()
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future]] = {}
    for task in tasks:
        if not task.done():
            by_loop.setdefault(task.get_loop(), []).append(task)
    for loop, pending in by_loop.items():
        if loop is here:
            await asyncio.gather(*pending, return_exceptions=True)
        elif not loop.is_closed():
            await _on_loop(loop, _ended(pending))


async def _ended(tasks: list[asyncio.Future]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)
