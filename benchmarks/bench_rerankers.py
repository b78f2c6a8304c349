"""Benchmark the LLM rerankers with a fake judge (no network, no model).

* LLM call counts: tournament at n = 5, 10, 16, 40 (cold cache, then the same query again),
  listwise at 35 documents (window 10, overlap 3).
* Wall time with a fake LLM sleeping 50 ms per call: sequential (max_concurrency=1, the baseline
  measured in the same run) vs max_concurrency=4 and 8, printed as speed-up ratios.

Run from the repository root:  .venv/bin/python benchmarks/bench_rerankers.py
Writes benchmarks/results/rerankers.json. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import time
from pathlib import Path

from lightrag_prism.rerankers import ListwiseReranker, TournamentReranker, tournament_call_count

RESULTS = Path(__file__).parent / "results" / "rerankers.json"
_REL = re.compile(r"rel=(\d+)")
_PAIR = re.compile(r"Passage A:\n(.*?)\n\nPassage B:\n(.*?)\n\nQuery:", re.DOTALL)
_DOC_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
# granite-io llmrerank call counts (one order per pair, documents dropped), docs/research/peers.md §4
GRANITE_IO_CALLS = {8: 28, 16: 36, 32: 52, 40: 75}


def _rel(text: str) -> int:
    match = _REL.search(text)
    return int(match.group(1)) if match else 0


class FakeJudge:
    """Answers both pairwise and listwise prompts from the ``rel=NN`` tag; sleeps ``delay`` per call."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    async def __call__(self, prompt: str, system_prompt: str | None = None) -> str:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        pair = _PAIR.search(prompt)
        if pair:
            return "B" if _rel(pair.group(2)) > _rel(pair.group(1)) else "A"
        docs = sorted(_DOC_LINE.findall(prompt), key=lambda item: -_rel(item[1]))
        return json.dumps({"ranking": [int(label) for label, _ in docs],
                           "scores": {label: _rel(text) for label, text in docs}})


def make_docs(n: int, seed: int = 0) -> list[str]:
    relevances = random.Random(seed).sample(range(100), n)
    return [f"document {i} rel={r:02d}" for i, r in enumerate(relevances)]


async def call_counts() -> dict:
    counts: dict = {"tournament": {}, "listwise": {}}
    for n in (5, 10, 16, 40):
        judge = FakeJudge()
        reranker = TournamentReranker(judge)
        docs = make_docs(n)
        cold = await reranker.rerank("q", docs)
        warm = await reranker.rerank("q", docs)
        counts["tournament"][str(n)] = {
            "llm_calls": cold.llm_calls, "formula": tournament_call_count(n),
            "repeat_query_calls": warm.llm_calls, "granite_io_calls": GRANITE_IO_CALLS.get(n),
        }
    outcome = await ListwiseReranker(FakeJudge()).rerank("q", make_docs(35))
    counts["listwise"]["35"] = {"llm_calls": outcome.llm_calls, "window_size": 10, "overlap": 3}
    return counts


async def _timed(make, docs: list[str]) -> tuple[float, int]:
    reranker = make()
    start = time.perf_counter()
    outcome = await reranker.rerank("q", docs)
    return time.perf_counter() - start, outcome.llm_calls


async def wall_times(delay: float, limits: tuple[int, ...]) -> dict:
    cases = {
        "tournament_n16": (lambda c: TournamentReranker(FakeJudge(delay), max_concurrency=c), make_docs(16)),
        "tournament_n40": (lambda c: TournamentReranker(FakeJudge(delay), max_concurrency=c), make_docs(40)),
        "listwise_n35": (lambda c: ListwiseReranker(FakeJudge(delay), max_concurrency=c), make_docs(35)),
    }
    report: dict = {}
    for name, (factory, docs) in cases.items():
        rows = {}
        for limit in limits:
            seconds, calls = await _timed(lambda: factory(limit), docs)
            rows[str(limit)] = {"seconds": round(seconds, 3), "llm_calls": calls}
        baseline = rows[str(limits[0])]["seconds"]
        for row in rows.values():
            row["speedup_vs_sequential"] = round(baseline / row["seconds"], 2)
        report[name] = rows
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.05, help="fake LLM latency per call in seconds")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    counts = asyncio.run(call_counts())
    times = asyncio.run(wall_times(args.delay, (1, 4, 8)))
    print("LLM calls (fake judge)")
    for n, row in counts["tournament"].items():
        print(f"  tournament n={n:>2}: {row['llm_calls']:>3} calls (formula {row['formula']}), "
              f"repeat query {row['repeat_query_calls']}, granite-io {row['granite_io_calls']}")
    print(f"  listwise   n=35: {counts['listwise']['35']['llm_calls']} calls (windows of 10, overlap 3)")
    print(f"Wall time, fake LLM sleeping {args.delay * 1000:.0f} ms per call")
    for name, rows in times.items():
        cells = ", ".join(f"c={c}: {r['seconds']:.2f}s (x{r['speedup_vs_sequential']})" for c, r in rows.items())
        print(f"  {name}: {cells}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"delay_s": args.delay, "call_counts": counts, "wall_time": times}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
