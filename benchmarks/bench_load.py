"""Cold-query latency alone and beside a busy core, with the library's one-BLAS-thread query limit and without it.

Each query starts cold (its question embedded again, ``eval.bench.forget_query_caches``) on the MuSiQue bench index
(1,890 passages; built on first use). For each mode (``naive``, ``prism``, ``hipporag``), each setting (the
library's limit, ``lightrag_prism.threads.QUERY_BLAS``; and OpenBLAS's default, the limit off) and each load
(nothing else running; another process spinning one core for the whole measurement), the questions run in turn and
the p50 / p95 / max of their milliseconds are printed, with each p95 beside the same setting's p95 alone: the
targets of issue 68 are p95 with a busy core <= 1.5x alone, slowest <= 3x the p95 alone, alone p95 <= 1.5x p50.

    python benchmarks/bench_load.py --working-dir prism_storage/bench --questions 100

Writes benchmarks/results/load.json. Not collected by pytest. (Issue 68's server half, ``serve --workers 2`` with 8
concurrent clients during uploads, is not measured here yet.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from lightrag_prism.eval.bench import _rank_with_mode, forget_query_caches, load_dataset, open_index
from lightrag_prism.eval.index import passage_lookup
from lightrag_prism.threads import QUERY_BLAS, QUERY_BLAS_THREADS

RESULTS = Path(__file__).parent / "results" / "load.json"
MODES = ("naive", "prism", "hipporag")
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


async def timed_queries(rag, dataset, mode: str) -> list[float]:
    lookup, out = passage_lookup(dataset), []
    for question in dataset.questions:
        forget_query_caches(rag)
        start = time.perf_counter()
        await _rank_with_mode(rag, mode, question.text, lookup, {})
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(ms, 50)), 1), "p95": round(float(np.percentile(ms, 95)), 1),
            "max": round(max(ms), 1)}


async def measure(rag, dataset, busy_seconds: float) -> dict:
    results = {}
    for load in ("alone", "busy core"):
        spinner = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=busy_seconds)]) \
            if load == "busy core" else None
        try:
            for setting, threads in (("one BLAS thread (library)", QUERY_BLAS_THREADS), ("BLAS default", None)):
                QUERY_BLAS.threads = threads
                for mode in MODES:
                    await timed_queries(rag, dataset, mode)  # warm: views, imports
                    results.setdefault(setting, {}).setdefault(mode, {})[load] = summary(
                        await timed_queries(rag, dataset, mode))
        finally:
            QUERY_BLAS.threads = QUERY_BLAS_THREADS
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    return results


def table(results: dict) -> str:
    lines = ["| setting | mode | alone p50 / p95 / max ms | busy core p50 / p95 / max ms | busy p95 / alone p95 | "
             "busy max / alone p95 | alone p95 / p50 |", "|---|---|---|---|---|---|---|"]
    for setting, modes in results.items():
        for mode, loads in modes.items():
            alone, busy = loads["alone"], loads["busy core"]
            lines.append(f"| {setting} | {mode} | {alone['p50']} / {alone['p95']} / {alone['max']} | {busy['p50']} / "
                         f"{busy['p95']} / {busy['max']} | {busy['p95'] / alone['p95']:.2f}x | "
                         f"{busy['max'] / alone['p95']:.2f}x | {alone['p95'] / alone['p50']:.2f}x |")
    return "\n".join(lines)


async def run(args) -> dict:
    dataset = load_dataset("musique", args.questions)
    rag = await open_index(dataset, Path(args.working_dir) / f"{dataset.name}-{len(dataset.passages)}-openie")
    try:
        return await measure(rag, dataset, busy_seconds=3600)
    finally:
        await rag.finalize_storages()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--working-dir", default="prism_storage/bench")
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(table(results))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"Wrote {RESULTS}")


if __name__ == "__main__":
    main()
