"""The benchmark: every query mode (from the registry) plus three baselines over the same passages.

    python -m lightrag_prism.eval.bench --dataset musique --questions 100
    lightrag-prism bench --modes naive,hybrid,prism,bm25
    lightrag-prism bench --dataset pgdocs      # the PostgreSQL manual (apt-get install postgresql-doc-15)
    lightrag-prism bench --dataset notes       # a small company's notes

The baselines are what a user would pick instead of a graph: ``bm25`` (bm25s), ``dense`` (the chunk vectors'
nearest neighbours, LightRAG's own vector store) and ``bm25+dense``, the two fused by reciprocal rank (k = 60), the
"hybrid search" most RAG stacks ship. For each mode it reports passage recall@1/2/5/10 (HippoRAG's definition),
HoVer's all-gold-in-top-21, median and p95 per-query latency, and the paired bootstrap of its R@2 and R@5 minus the
best baseline's at that k (95% interval over the questions); it writes ``results.json``, ``results.md`` and
``results.png`` into ``--out``. The index is built once per working dir and reused. No LLM is used: modes run their
documented offline fallbacks. New modes appear here as soon as they are registered in ``lightrag_prism.retrievers``.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..backends.embedding_cache import embedding_cache_of
from ..param import PrismQueryParam
from ..retrievers import valid_modes
from .bm25 import BM25Index
from .datasets import Dataset, load_hotpotqa, load_musique
from .index import index_passages, long_passages, openie_replay_llm, passage_lookup
from .metrics import (all_in_top_k, paired_bootstrap, per_question_recall, recall_at_ks, reciprocal_rank_fusion,
                      summarize_latencies)
from .notes import load_notes
from .pgdocs import load_pgdocs

KS = (1, 2, 5, 10)
COMPARED_KS = (2, 5)  # each mode against the best baseline at these k
BASELINES = ("bm25", "dense", "bm25+dense")
BOOTSTRAP_SAMPLES = 2000
DEFAULT_CHUNK_TOKENS = 1200  # LightRAG's chunk_token_size
logger = logging.getLogger(__name__)
LOADERS = {"musique": load_musique, "hotpotqa": load_hotpotqa, "pgdocs": load_pgdocs, "notes": load_notes}


def default_modes() -> list[str]:
    return [m for m in valid_modes() if m != "bypass"] + list(BASELINES)


def load_dataset(name: str, n_questions: int | None) -> Dataset:
    if name not in LOADERS:
        raise ValueError(f"Unknown dataset {name!r}. Valid datasets: {', '.join(sorted(LOADERS))}")
    dataset = LOADERS[name]()
    return dataset.subset(n_questions) if n_questions and n_questions < len(dataset.questions) else dataset


async def open_index(dataset: Dataset, working_dir: Path, embedding_func=None, progress: bool = True,
                     text_only: bool = False, query_runtime: str = "numpy", batch_seconds: list | None = None):
    """A PrismRAG over ``working_dir`` holding every passage of ``dataset`` (built on first use, then reused).

    The graph replays the dataset's OpenIE triples when it has them, unless ``text_only``: then, as for any
    dataset without triples, the offline extractor reads the passages' text. Passages stay whole: the chunk size is
    fitted to the longest one when it is above LightRAG's default (the ones above are logged). Without an
    ``embedding_func``, the local MiniLM, questions embedded as ``query_runtime`` says (``local_embedding_func``)."""
    from ..backends import OfflineTokenizer, local_embedding_func
    from ..rag import PrismRAG

    tokenizer = OfflineTokenizer()
    long = long_passages(dataset, tokenizer, DEFAULT_CHUNK_TOKENS)
    if long:
        logger.warning("%d passage(s) of %s are longer than %d tokens (longest %s, %d tokens): chunk size %d",
                       len(long), dataset.name, DEFAULT_CHUNK_TOKENS, long[0][0], long[0][1], long[0][1])
    llm = openie_replay_llm(dataset) if dataset.openie and not text_only else None
    rag = PrismRAG(
        working_dir=str(working_dir), workspace=dataset.name, llm_model_func=llm, tokenizer=tokenizer,
        embedding_func=embedding_func or local_embedding_func(max_token_size=512, query_runtime=query_runtime),
        embedding_batch_num=64, entity_extract_max_gleaning=0, enable_llm_cache_for_entity_extract=False,
        chunk_token_size=max([DEFAULT_CHUNK_TOKENS] + [n for _, n in long]),
    )
    await rag.initialize_storages()
    await index_passages(rag, dataset, progress=progress, batch_seconds=batch_seconds)
    return rag


async def index_stats(rag, build_seconds: float, top: int = 10) -> dict[str, Any]:
    """Entities, relations, the ``top`` highest-degree entities and the build time (0 when the index was reused)."""
    snapshot = await rag.graph_snapshot()
    degrees = np.diff(snapshot.adj.indptr)
    hubs = np.argsort(-degrees, kind="stable")[:top]
    return {"entities": snapshot.num_nodes, "relations": snapshot.num_edges,
            "top_degree": [[snapshot.node_ids[i], int(degrees[i])] for i in hubs],
            "build_seconds": round(build_seconds, 1), "extractor": rag.offline_extractor_status}


def parse_mode_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"hipporag:hipporag_dense_head=0:passage_node_weight=0.1"`` -> ``("hipporag", {knob: value})``.

    A mode name alone is the mode with its defaults; each ``:knob=value`` overrides one ``QueryParam`` field (values
    are Python literals: ints, floats, booleans, strings), so knob variants run side by side in one report.
    """
    mode, *pairs = spec.strip().split(":")
    overrides = {}
    for pair in pairs:
        knob, sep, raw = pair.partition("=")
        if not sep or not knob.strip():
            raise ValueError(f"Bad knob override {pair!r} in mode spec {spec!r}: expected knob=value")
        try:
            overrides[knob.strip()] = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            overrides[knob.strip()] = raw.strip()
    unknown = [k for k in overrides if k not in PrismQueryParam.__dataclass_fields__]
    if unknown:
        raise ValueError(f"Unknown QueryParam field(s) {unknown} in mode spec {spec!r}")
    return mode.strip(), overrides


async def _rank_with_mode(rag, mode: str, query: str, lookup: dict[str, str],
                          knobs: dict) -> tuple[list[str], dict]:
    result = await rag.aquery_data(query, PrismQueryParam(mode=mode, enable_rerank=False, **knobs))
    chunks = (result.get("data") or {}).get("chunks", [])
    ranked = list(dict.fromkeys(lookup.get(c.get("content", "").strip(), c.get("chunk_id")) for c in chunks))
    return ranked, (result.get("metadata") or {}).get("prism", {})


def forget_query_caches(rag, cache=None) -> None:
    """Before a timed query: it embeds its question, as a new question does, so the instance's vector cache
    (``cache``, default the one inside ``rag.embedding_func``) is emptied. Otherwise the first mode run embeds every
    question and the modes after it reuse the vectors (about 40 ms a query on a 2-core AVX2 machine), which made
    every mode look faster than ``naive`` next to it. The offline tokenizer's kept segments are forgotten too: a
    mode would find the chunk lines of the same question already encoded by the mode before it."""
    cache = cache if cache is not None else embedding_cache_of(rag.embedding_func)
    if cache is not None:
        cache.clear()
    if hasattr(rag.tokenizer, "clear"):
        rag.tokenizer.clear()


async def dense_ranking(rag, question: str, lookup: dict[str, str], k: int) -> list[str]:
    """The passages whose chunk vectors are nearest the question's, best first (LightRAG's vector store)."""
    rows = await rag.chunks_vdb.query(question, top_k=k)
    return list(dict.fromkeys(lookup.get(str(r.get("content", "")).strip(), r.get("id")) for r in rows))


async def rank_baseline(rag, mode: str, question: str, lookup: dict[str, str], bm25: BM25Index) -> list[str]:
    depth = max(KS) * 3
    lexical = [pid for pid, _ in bm25.search(question, k=depth)] if mode != "dense" else []
    dense = await dense_ranking(rag, question, lookup, depth) if mode != "bm25" else []
    return reciprocal_rank_fusion([lexical, dense]) if mode == "bm25+dense" else lexical or dense


async def evaluate_mode(rag, mode: str, dataset: Dataset, bm25: BM25Index | None, progress: bool,
                        overrides: dict | None = None) -> tuple[dict, list[list[str]]]:
    """Run ``mode`` on every question: (summary metrics, ranked passage ids per question).
    ``overrides``: extra ``PrismQueryParam`` fields (e.g. one perspective knob inside a stock mode).

    Each timed query starts cold (:func:`forget_query_caches`)."""
    lookup = passage_lookup(dataset)
    name, knobs = parse_mode_spec(mode) if mode not in BASELINES else (mode, {})
    knobs.update(overrides or {})
    retrieved, latencies, fallbacks = [], [], {}
    cache = embedding_cache_of(rag.embedding_func)
    for question in tqdm(dataset.questions, desc=f"{mode:>10}", unit="q", disable=not progress):
        forget_query_caches(rag, cache)
        start = time.perf_counter()
        if mode in BASELINES:
            ranked, meta = await rank_baseline(rag, mode, question.text, lookup, bm25), {}
        else:
            ranked, meta = await _rank_with_mode(rag, name, question.text, lookup, knobs)
        latencies.append((time.perf_counter() - start) * 1000)
        retrieved.append(ranked)
        for fb in meta.get("fallbacks", []):
            fallbacks[fb["step"]] = fallbacks.get(fb["step"], 0) + 1
    gold = [q.gold_passage_ids for q in dataset.questions]
    return summarize(gold, retrieved, latencies, fallbacks), retrieved


def summarize(gold, retrieved, latencies, fallbacks) -> dict:
    return {
        "recall": {str(k): round(100 * v, 1) for k, v in recall_at_ks(gold, retrieved, KS).items()},
        "all_in_top_21": round(100 * all_in_top_k(gold, retrieved, 21), 1),
        "latency_ms": {k: round(v, 1) for k, v in summarize_latencies(latencies).items()},
        "fallbacks": fallbacks,
    }


def compare_to_best_baseline(report: dict, gold: list, rankings: dict[str, list[list[str]]],
                             samples: int = BOOTSTRAP_SAMPLES) -> None:
    """``report["modes"][mode]["vs_best_baseline"]``: for k in COMPARED_KS, the paired bootstrap of the mode's
    recall@k minus that of the baseline with the best recall@k (named), over the same questions."""
    baselines = [b for b in BASELINES if b in rankings]
    if not baselines:
        return
    for k in COMPARED_KS:
        best = max(baselines, key=lambda b: report["modes"][b]["recall"][str(k)])
        base = per_question_recall(gold, rankings[best], k)
        for mode, ranked in rankings.items():
            report["modes"][mode].setdefault("vs_best_baseline", {})[f"R@{k}"] = {
                "baseline": best, **paired_bootstrap(per_question_recall(gold, ranked, k), base, samples)}


def markdown_table(report: dict) -> str:
    index = report.get("index") or {}
    hubs = ", ".join(f"{name} ({degree})" for name, degree in index.get("top_degree", []))
    best = next((r["vs_best_baseline"] for r in report["modes"].values() if "vs_best_baseline" in r), {})
    versus = [f"R@{k} - {best[f'R@{k}']['baseline']} [95% CI]" for k in COMPARED_KS if f"R@{k}" in best]
    lines = [f"Dataset: {report['dataset']} ({report['questions']} questions, {report['passages']} passages); "
             f"graph from {report.get('graph_source', 'openie')}: {index.get('entities')} entities, "
             f"{index.get('relations')} relations, built in {index.get('build_seconds')} s", "",
             f"Highest degree: {hubs}", "",
             "| mode | R@1 | R@2 | R@5 | R@10 | all-in-top-21 | " + "".join(f"{v} | " for v in versus)
             + "median ms | p95 ms |", "|---|---|---|---|---|---|" + "---|" * len(versus) + "---|---|"]
    for mode, r in report["modes"].items():
        rc, lat = r["recall"], r["latency_ms"]
        cells = [r["vs_best_baseline"][f"R@{k}"] for k in COMPARED_KS if f"R@{k}" in r.get("vs_best_baseline", {})]
        diffs = "".join(f"{c['mean']:+.1f} [{c['ci95'][0]:+.1f}, {c['ci95'][1]:+.1f}] | " for c in cells)
        lines.append(f"| {mode} | {rc['1']} | {rc['2']} | {rc['5']} | {rc['10']} | {r['all_in_top_21']} | {diffs}"
                     f"{lat['median']} | {lat['p95']} |")
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    modes = list(report["modes"])
    x = np.arange(len(modes))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(modes)), 4))
    for i, k in enumerate(("2", "5")):
        ax.bar(x + (i - 0.5) * 0.38, [report["modes"][m]["recall"][k] for m in modes], 0.38, label=f"R@{k}")
    ax.set_xticks(x, modes, rotation=30, ha="right")
    ax.set_ylabel("passage recall (%)")
    ax.set_title(f"{report['dataset']}: {report['questions']} questions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


async def run_bench(dataset_name: str = "musique", questions: int | None = None, modes: list[str] | None = None,
                    working_dir: str | Path = "prism_storage/bench", out: str | Path = "benchmarks/results/bench",
                    progress: bool = True, text_only: bool = False, query_runtime: str = "numpy"
                    ) -> tuple[dict[str, Any], Dataset, dict[str, list[list[str]]]]:
    modes = modes or default_modes()
    unknown = [m for m in modes if m not in BASELINES and parse_mode_spec(m)[0] not in valid_modes()]
    if unknown:
        raise ValueError(f"Unknown mode(s) {unknown}. Valid: {', '.join(default_modes())}")
    dataset = load_dataset(dataset_name, questions)
    graph_source = "text" if text_only or not dataset.openie else "openie"
    work = Path(working_dir) / f"{dataset.name}-{len(dataset.passages)}-{graph_source}"
    start = time.perf_counter()
    rag = await open_index(dataset, work, progress=progress, text_only=text_only, query_runtime=query_runtime)
    build_seconds = time.perf_counter() - start
    bm25 = BM25Index(dataset.passages) if {"bm25", "bm25+dense"} & set(modes) else None
    report = {"dataset": dataset.name, "questions": len(dataset.questions), "passages": len(dataset.passages),
              "graph_source": graph_source, "index": await index_stats(rag, build_seconds), "modes": {}}
    rankings = {}
    try:
        for mode in modes:
            report["modes"][mode], rankings[mode] = await evaluate_mode(rag, mode, dataset, bm25, progress)
    finally:
        await rag.finalize_storages()
    compare_to_best_baseline(report, [q.gold_passage_ids for q in dataset.questions], rankings)
    write_report(report, Path(out))
    return report, dataset, rankings


def write_report(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2))
    (out / "results.md").write_text(markdown_table(report))
    plot(report, out / "results.png")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--questions 0`` used to mean "all", as the default does)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="musique", choices=sorted(LOADERS))
    parser.add_argument("--questions", type=positive_int, default=None, help="first N questions (default: all)")
    parser.add_argument("--modes", default=None, help=f"comma-separated (default: {','.join(default_modes())}); "
                        "a mode may carry knob overrides: hipporag:hipporag_dense_head=0:passage_node_weight=0.1")
    parser.add_argument("--text-only", action="store_true",
                        help="build the graph from the passages' text with the offline extractor, ignoring the "
                             "dataset's precomputed triples (what a user without an LLM gets)")
    parser.add_argument("--working-dir", default="prism_storage/bench",
                        help="where indexes are built and reused (default: %(default)s)")
    parser.add_argument("--out", default="benchmarks/results/bench",
                        help="where results.json/.md/.png are written (default: %(default)s)")
    parser.add_argument("--query-runtime", default="numpy", choices=("numpy", "worker"),
                        help="embed the questions in-process with MiniLM in numpy (default) or in the torch worker "
                             "that embeds the passages (see lightrag_prism/backends/query_encoder.py)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    run_from_args(args)


def run_from_args(args) -> dict:
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()] if args.modes else None
    report, _, _ = asyncio.run(run_bench(args.dataset, args.questions, modes, args.working_dir, args.out,
                                         text_only=args.text_only, query_runtime=args.query_runtime))
    print(markdown_table(report))
    print(f"Wrote {args.out}/results.json, results.md and results.png")
    return report


if __name__ == "__main__":
    main()
