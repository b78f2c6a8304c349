"""Retrieval at a realistic size: every bundled passage in one index, each set's questions scored against it.

    python benchmarks/bench_pooled.py                      # text only (offline extractor), ~9,000 passages
    python benchmarks/bench_pooled.py --openie             # MuSiQue passages from their GPT-3.5 triples
    python benchmarks/bench_pooled.py --modes naive,prism --bootstrap 2000

The pooled corpus is MuSiQue's 1,890 passages + HotpotQA's 994 + the 2WikiMultihopQA corpus's 6,119 (duplicates
once), indexed as the bench indexes one set (one passage = one document = one chunk, batches of 500 per
``ainsert``, local MiniLM, no LLM), in ``--working-dir`` and reused by later runs. Passages longer than LightRAG's
default chunk size are reported, and the chunk size is fitted to the longest so that every passage goes in whole.

For MuSiQue and HotpotQA it reports, per mode, R@1/2/5/10 against the pooled index, the median and p95 latency,
and a paired bootstrap (95% CI) of each mode's R@2 and R@5 minus naive's over the same questions. The rankings of
every question are saved in ``<out>/rankings.json``; the report in ``<out>/results.json`` and ``results.md``.
``--single-sets DIR`` also scores each set on its own index in DIR (where ``lightrag-prism bench --working-dir DIR``
builds them; built here otherwise), so the two sizes are compared in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lightrag_prism.eval.bench import (  # noqa: E402
    DEFAULT_CHUNK_TOKENS, KS, evaluate_mode, index_stats, load_dataset, open_index)
from lightrag_prism.eval.datasets import Dataset, load_2wiki_corpus  # noqa: E402
from lightrag_prism.eval.index import long_passages  # noqa: E402
from lightrag_prism.eval.metrics import paired_bootstrap, per_question_recall  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import ResourceMonitor  # noqa: E402

SETS = ("musique", "hotpotqa")
DEFAULT_MODES = "naive,prism,hipporag,fidelis,mix"


def pooled_dataset(openie: bool) -> tuple[Dataset, dict[str, Dataset]]:
    """The pooled corpus (no questions of its own) and the question sets scored against it."""
    sets = {name: load_dataset(name, None) for name in SETS}
    passages = {}
    for dataset in sets.values():
        passages.update((p.id, p) for p in dataset.passages)
    passages.update((p.id, p) for p in load_2wiki_corpus())
    name = "pooled-openie" if openie else "pooled"
    triples = sets["musique"].openie if openie else None
    return Dataset(name=name, passages=list(passages.values()), questions=[], openie=triples), sets


async def score(rag, dataset: Dataset, modes: list[str], samples: int) -> tuple[dict, dict]:
    rows, rankings = {}, {}
    for mode in modes:
        rows[mode], rankings[mode] = await evaluate_mode(rag, mode, dataset, None, progress=True)
    gold = [q.gold_passage_ids for q in dataset.questions]
    if "naive" in rankings:
        for mode in modes:
            rows[mode]["vs_naive"] = {f"R@{k}": paired_bootstrap(per_question_recall(gold, rankings[mode], k),
                                                                per_question_recall(gold, rankings["naive"], k),
                                                                samples) for k in (2, 5)}
    questions = {q.id: {mode: rankings[mode][i][:max(KS)] for mode in modes} for i, q in enumerate(dataset.questions)}
    return rows, questions


def embedder_setup() -> str:
    """The local embedder's workers as they ran ("2 workers x 1 thread, bf16"); "not started" when the index was
    reused and nothing was embedded in a worker."""
    from lightrag_prism.backends import local_embedder

    config = local_embedder.running_config()
    if config is None:
        return "not started"
    return f"{config[2]} worker(s) x {config[0]} thread(s), {local_embedder.worker_precision()}"


def build_line(resources: dict) -> str:
    split = resources["cores_busy_by_process"]
    peaks = resources.get("peak_rss_mb_by_process", {})
    return (f"peak RSS {resources['peak_rss_mb']} MB (with the embedder workers; this process alone "
            f"{peaks.get('main', '?')} MB, the workers {peaks.get('children', '?')} MB), {resources['cores_busy']} cores "
            f"busy on average over {resources['wall_seconds']} s (this process {split['main']}, embedder workers "
            f"{split['children']}; {resources['idle_seconds']} s with everything waiting)")


def table(title: str, rows: dict) -> str:
    lines = [f"\n{title}\n", "| mode | R@1 | R@2 | R@5 | R@10 | R@2 - naive (95% CI) | R@5 - naive (95% CI) | "
             "median ms | p95 ms |", "|---|---|---|---|---|---|---|---|---|"]
    for mode, row in rows.items():
        recall, latency, vs = row["recall"], row["latency_ms"], row.get("vs_naive", {})
        cells = [f"{vs[m]['mean']:+.1f} [{vs[m]['ci95'][0]:+.1f}, {vs[m]['ci95'][1]:+.1f}]" if m in vs else "-"
                 for m in ("R@2", "R@5")]
        lines.append(f"| {mode} | {recall['1']} | {recall['2']} | {recall['5']} | {recall['10']} | {cells[0]} | "
                     f"{cells[1]} | {latency['median']} | {latency['p95']} |")
    return "\n".join(lines)


async def run(args) -> dict:
    pooled, sets = pooled_dataset(args.openie)
    modes = [m for m in args.modes.split(",") if m]
    work = Path(args.working_dir)
    report = {"corpus": pooled.name, "passages": len(pooled.passages), "modes": modes, "sets": {}}
    start, batches = time.perf_counter(), []
    with ResourceMonitor() as build:
        rag = await open_index(pooled, work / f"{pooled.name}-{len(pooled.passages)}", text_only=not args.openie,
                               batch_seconds=batches)
    report["build_seconds"] = round(time.perf_counter() - start, 1)
    report["build_resources"] = build.report()  # the build process and its embedder workers
    report["embedder"] = embedder_setup()
    report["batch_seconds"] = batches  # ainsert batches of 500 passages, in order (none when reused)
    report["chunk_token_size"] = rag.chunk_token_size
    report["index"] = await index_stats(rag, report["build_seconds"])
    report["long_passages"] = long_passages(pooled, rag.tokenizer, DEFAULT_CHUNK_TOKENS)
    rankings = {}
    try:
        with ResourceMonitor() as querying:
            for name, dataset in sets.items():
                rows, rankings[name] = await score(rag, dataset, modes, args.bootstrap)
                report["sets"][name] = {"pooled": rows}
        report["query_resources"] = querying.report()
    finally:
        await rag.finalize_storages()
    if args.single_sets:
        for name, dataset in sets.items():
            source = "openie" if args.openie and dataset.openie else "text"
            where = Path(args.single_sets) / f"{dataset.name}-{len(dataset.passages)}-{source}"
            single = await open_index(dataset, where, text_only=source == "text")
            try:
                report["sets"][name]["own_index"], _ = await score(single, dataset, modes, args.bootstrap)
            finally:
                await single.finalize_storages()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2))
    (out / "rankings.json").write_text(json.dumps(rankings))
    how = "built" if batches else "index reused, opened"  # an open reads the stores and builds the query views
    text = [f"{pooled.name}: {len(pooled.passages)} passages, {how} in {report['build_seconds']} s; chunk_token_size "
            f"{rag.chunk_token_size}; {report['index']['entities']} entities, {report['index']['relations']} relations"
            f"; embedder {report['embedder']}"]
    if batches:
        # A fresh build's batches are all full but the last when the corpus is not a multiple of 500 (9,002: two
        # passages), which says nothing about how batches grow: compare the full ones.
        full = batches[:-1] if len(batches) > 1 and len(pooled.passages) % 500 else batches
        text.append(f"batches of 500: first {full[0]} s, last full {full[-1]} s ({full[-1] / full[0]:.2f}x), "
                    f"slowest {max(full)} s ({max(full) / full[0]:.2f}x); build "
                    f"{build_line(report['build_resources'])}")
    text.append(f"querying: {build_line(report['query_resources'])}")
    for name, result in report["sets"].items():
        for where, rows in result.items():
            text.append(table(f"{name} ({len(sets[name].questions)} questions), {where} index", rows))
    (out / "results.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--openie", action="store_true", help="MuSiQue passages from their GPT-3.5 triples")
    parser.add_argument("--modes", default=DEFAULT_MODES)
    parser.add_argument("--bootstrap", type=int, default=2000, help="resamples of the paired bootstrap")
    parser.add_argument("--single-sets", metavar="DIR", help="also score each set on its own index in DIR")
    parser.add_argument("--working-dir", default="prism_storage/bench")
    parser.add_argument("--out", default=None, help="default: benchmarks/results/pooled[-openie]")
    args = parser.parse_args()
    args.out = args.out or str(ROOT / "benchmarks" / "results" / ("pooled-openie" if args.openie else "pooled"))
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
