"""Stopping a background task for sure.

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
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
    return None if task.cancelled() else task.exception()
