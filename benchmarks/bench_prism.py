"""The prism mode vs hybrid with each perspective alone, hybrid, naive and BM25 on MuSiQue (issue 3's rows).

Same index and metrics as ``python -m lightrag_prism.eval.bench`` (``open_index``/``evaluate_mode``: passages
inserted through LightRAG's pipeline with the published OpenIE triples, all-MiniLM-L6-v2, no LLM, offline keywords;
passage recall over ``aquery_data``'s ``data.chunks`` in order; median latency per query, ratio to ``naive`` in the
same run). Each configuration gets one warm-up query first (snapshot, vectors and FastRP cached as in a
long-running instance).

    .venv/bin/python benchmarks/bench_prism.py --questions 100 --working-dir /work/runs/bench
    .venv/bin/python benchmarks/bench_prism.py --questions 20 --only prism --set prism_expansion_weight=0.1

Writes benchmarks/results/prism.json. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from pathlib import Path

from lightrag_prism.eval.bench import evaluate_mode, load_dataset, open_index
from lightrag_prism.eval.bm25 import BM25Index
from lightrag_prism.param import PrismQueryParam

RESULTS = Path(__file__).parent / "results" / "prism.json"
CONFIGS = {
    "naive": ("naive", {}),
    "prism": ("prism", {}),
    "hybrid": ("hybrid", {}),
    "hybrid+multihop": ("hybrid", {"max_hop": 2}),
    "hybrid+ppr": ("hybrid", {"top_ppr_nodes": 5}),
    "hybrid+fastrp": ("hybrid", {"top_fastrp_nodes": 5}),
    "bm25": ("bm25", {}),
}


async def paired_latency(rag, dataset, mode: str, knobs: dict, repeats: int = 3) -> dict:
    """``mode`` vs naive alternated question by question (same load on both), best of ``repeats`` per question:
    medians and the median of the per-question ratios. More robust than sequential runs on a busy machine."""
    ratios, ours, base = [], [], []
    for q in dataset.questions:
        best = {}
        for _ in range(repeats):  # no per-query cache exists for aquery_data in either mode
            for m in ("naive", mode):
                start = time.perf_counter()
                await rag.aquery_data(q.text, PrismQueryParam(mode=m, enable_rerank=False, **(knobs if m == mode else {})))
                best[m] = min(best.get(m, float("inf")), (time.perf_counter() - start) * 1000)
        ours.append(best[mode])
        base.append(best["naive"])
        ratios.append(best[mode] / best["naive"])
    return {"median_ms": round(statistics.median(ours), 1), "naive_median_ms": round(statistics.median(base), 1),
            "median_ratio": round(statistics.median(ratios), 2)}


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


async def run(args) -> dict:
    dataset = load_dataset("musique", args.questions)
    rag = await open_index(dataset, Path(args.working_dir) / f"{dataset.name}-{len(dataset.passages)}",
                           progress=False)
    extra = dict(kv.split("=", 1) for kv in args.set)
    names = args.only.split(",") if args.only else list(CONFIGS)
    bm25 = BM25Index(dataset.passages) if "bm25" in names else None
    rows = {}
    try:
        for name in names:
            mode, knobs = CONFIGS[name]
            knobs = {**knobs, **({k: _value(v) for k, v in extra.items()} if mode == "prism" else {})}
            if mode != "bm25":  # warm-up
                await rag.aquery_data(dataset.questions[0].text, PrismQueryParam(mode=mode, **knobs))
            rows[name], _ = await evaluate_mode(rag, mode, dataset, bm25, False, knobs)
        if args.paired:
            rows["paired_latency"] = await paired_latency(
                rag, dataset, "prism", {k: _value(v) for k, v in extra.items()})
    finally:
        await rag.finalize_storages()
    return rows


def table(rows: dict) -> str:
    base = rows.get("naive", {}).get("latency_ms", {}).get("median")
    lines = ["| configuration | R@1 | R@2 | R@5 | R@10 | median ms | × naive |", "|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if name == "paired_latency":
            continue
        rc, med = r["recall"], r["latency_ms"]["median"]
        ratio = f"{med / base:.2f}" if base and name != "bm25" else "–"
        lines.append(f"| {name} | {rc['1']} | {rc['2']} | {rc['5']} | {rc['10']} | {med} | {ratio} |")
    paired = rows.get("paired_latency")
    if paired:
        lines.append(f"\npaired (naive and prism alternated per question, best of 3): prism {paired['median_ms']} ms, "
                     f"naive {paired['naive_median_ms']} ms, median per-question ratio {paired['median_ratio']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--working-dir", default="/work/runs/bench")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(CONFIGS)}")
    parser.add_argument("--paired", action="store_true", help="also time prism vs naive alternated per question")
    parser.add_argument("--set", action="append", default=[], help="prism knob override key=value (repeatable)")
    args = parser.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    rows = asyncio.run(run(args))
    print(table(rows))
    if not args.only and not args.set:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"questions": args.questions, "rows": rows}, indent=2))
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
