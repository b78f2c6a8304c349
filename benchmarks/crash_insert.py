"""Kill -9 during a 200-document offline insert, restart, check nothing is lost or doubled: over several seeds.

    python benchmarks/crash_insert.py                 # seeds 1..12
    python benchmarks/crash_insert.py --seeds 5,6

Per seed, what ``tests/insert/test_crash_restart.py`` does once: three SIGKILLs at random points (0.5-6 s after the
storages open), then the same ``ainsert`` to completion, then the index checks (every document once and PROCESSED,
chunks stored/embedded/found by their own text, no dangling relation). Prints the documents processed when each
kill landed and whether the checks passed. Exit status 1 if any seed failed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.insert.test_crash_restart import (  # noqa: E402
    KILL_WINDOW, KILLS, N_DOCS, check_index, processed_count, start_worker,
)


def one_seed(seed: int) -> tuple[list[int], str]:
    rng, directory = random.Random(seed), Path(tempfile.mkdtemp(prefix=f"crash_{seed}_"))
    progress = []
    for _ in range(KILLS):
        worker = start_worker(directory)
        worker.stdout.readline()
        time.sleep(rng.uniform(*KILL_WINDOW))
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        progress.append(processed_count(directory))
    worker = start_worker(directory)
    out, _ = worker.communicate(timeout=600)
    if worker.returncode != 0:
        return progress, f"restart exited {worker.returncode}"
    try:
        asyncio.run(check_index(directory))
    except AssertionError as failure:
        return progress, f"FAILED: {str(failure).splitlines()[0][:200]}"
    return progress, "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default=",".join(str(s) for s in range(1, 13)))
    args = parser.parse_args()
    failed = 0
    for seed in [int(s) for s in args.seeds.split(",")]:
        progress, verdict = one_seed(seed)
        failed += verdict != "ok"
        print(f"seed {seed:>3}: processed of {N_DOCS} when the kills landed {progress}: {verdict}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
