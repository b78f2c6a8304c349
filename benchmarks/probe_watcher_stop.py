"""Start and stop a replica's version watcher over a real Redis many times; count the stops that never end.

    python benchmarks/probe_watcher_stop.py                  # 1,500 stops through VersionWatcher.stop
    python benchmarks/probe_watcher_stop.py --single-cancel  # the same, stopped as before: one cancel(), then await

The watcher polls Redis every millisecond here, so a stop usually lands in a Redis read. On Python 3.11 a single
``cancel()`` that lands as a read's socket write completes is lost (``lightrag_prism/background.py``), and awaiting
the task then never ends: such a stop is counted as hung after 3 s. Starts Redis and PostgreSQL + pgvector as the
tests do (``tests/storages/servers.py``), on 127.0.0.1, and stops them at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.storages.replica_worker import replica  # noqa: E402
from tests.storages.servers import server_stack_env  # noqa: E402

HUNG_AFTER = 3.0  # seconds


async def stop_with_a_single_cancel(watcher) -> None:
    task, watcher._task = watcher._task, None
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def probe(working_dir: Path, stops: int, single_cancel: bool) -> int:
    rag = replica("redis+pgvector", str(working_dir), "probe", shared_version_interval=0.001)
    await rag.initialize_storages()
    watcher, hung = rag.version_watcher, 0
    await watcher.stop()
    for _ in range(stops):
        watcher.start()
        await asyncio.sleep(random.uniform(0, 0.01))
        task = watcher._task
        stopping = asyncio.ensure_future(stop_with_a_single_cancel(watcher) if single_cancel else watcher.stop())
        await asyncio.wait({stopping}, timeout=HUNG_AFTER)
        if not stopping.done():
            hung += 1
            task.cancel()  # a second cancel ends it (lost again only by another coincidence)
            await asyncio.wait({stopping}, timeout=HUNG_AFTER)
    await rag.finalize_storages()
    return hung


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=1500)
    parser.add_argument("--single-cancel", action="store_true", help="stop as before the fix: one cancel()")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, server_stack_env(Path(tmp) / "servers") as env:
        os.environ.update(env)
        hung = asyncio.run(probe(Path(tmp) / "replica", args.stops, args.single_cancel))
    way = "one cancel()" if args.single_cancel else "VersionWatcher.stop"
    print(f"{args.stops} stops ({way}, Python {sys.version.split()[0]}): {hung} hung")


if __name__ == "__main__":
    main()
