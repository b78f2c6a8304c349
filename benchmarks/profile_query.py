"""Where a query's time goes: stage timers inside ``naive``, ``prism`` and ``hipporag`` queries on a bench index.

    python benchmarks/profile_query.py --working-dir prism_storage/bench           # pooled index, HotpotQA, 60 q
    python benchmarks/profile_query.py --working-dir DIR --set musique --questions 100
    python benchmarks/profile_query.py --own-index DIR --set hotpotqa              # the set's own index

    python benchmarks/profile_query.py --working-dir DIR --versus-own DIR3 --set musique   # pooled/own, paired
    python benchmarks/profile_query.py --working-dir DIR --set musique --unpinned        # pinned tokens, paired
    python benchmarks/profile_query.py --working-dir DIR --set musique --fastrp-inline   # FastRP's thread, paired
    python benchmarks/profile_query.py --working-dir DIR --versus-own DIR3 --set musique --fine  # its parts

The pooled index is ``bench_pooled.py``'s (the same ``--working-dir``; built there if missing, about 20 minutes);
``--own-index DIR`` opens the set's own index as ``bench_pooled.py --single-sets DIR`` does. Each question is asked
once per mode, the modes in rotating order, each cold as in the bench (``eval.bench.forget_query_caches``).
``--versus-own DIR`` opens both indexes in one process and asks each question of every mode on both, in rotating
order, then prints each mode's pooled/own ratio of medians: on a VM whose speed drifts between processes (the same
run's own-index medians have moved by a third from one process to the next) a ratio of two separate runs is noise.
Timers wrap the stages in place (module attributes replaced for the run); a stage called several times in one
query counts its sum. Printed: the median ms per query of each stage and of the whole
query. "LightRAG context and the rest" is the whole query minus the question's embedding, the retriever and the
tokenizer: LightRAG's context assembly on the event loop, and the wrappers. The tokenizer runs in LightRAG's
tokenizer thread while the query waits for it, so it adds to the query's time. ``--unpinned`` adds, for each mode
but ``naive``, ``<mode>~unpinned``: the same mode with the tokenizer's pinned description tokens set aside for the
query (``OfflineTokenizer.pin_descriptions``), in the same rotation. ``--fastrp-inline`` adds ``prism~fastrp-inline``:
``prism`` with FastRP scored on the query's own thread by OpenBLAS's matrix-vector product over a column-major copy
of the embedding (stop 61's code), against its own thread beside multi-hop and the PPR (``prism``). ``--fine`` adds
the retriever's smaller parts (:data:`FINE_STAGES`): linking, the dense passage scores, the PPR's per-query weights
and CG solve, the top nodes, fusion, the multi-hop paths, the items; and "rest of the retriever", what is left of
the retriever once its parts on the query's path are taken out. Every run also prints each mode's p95 of the whole
query. Writes ``--out`` (JSON) if given.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import inspect
import json
import logging
import statistics
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pooled import pooled_dataset  # noqa: E402

from lightrag_prism.eval.bench import (  # noqa: E402
    _rank_with_mode, forget_query_caches, open_index, parse_mode_spec, passage_lookup)
from lightrag_prism.retrievers.prism.expand import FASTRP_THREAD  # noqa: E402

EMBED, TOKENIZER = "embedding the question", "tokenizer (LightRAG's counts)"
RETRIEVER = "retriever (without the embedding)"
PPR = "  PPR over entities and passages"
FASTRP = "  FastRP (its own thread)"
# (label, module, attribute): the attribute is looked up when the stage runs, so the module's own calls go through
# the timer. Stages inside the retriever are part of its time.
STAGES = (
    (EMBED, "lightrag_prism.backends.embedding_cache", "CachedEmbedding.__call__"),
    (RETRIEVER, "lightrag_prism.retrievers.prism", "retrieve"),
    (RETRIEVER, "lightrag_prism.retrievers.hipporag", "retrieve"),
    ("  fact scan", "lightrag_prism.retrievers.views.index", "IndexRows.scores"),
    ("  multi-hop", "lightrag_prism.retrievers.prism.expand", "multihop_expand"),
    (FASTRP, "lightrag_prism.retrievers.prism.expand", "fastrp_top"),
    (PPR, "lightrag_prism.retrievers.views.passage_rank", "passage_ppr"),
    (PPR, "lightrag_prism.retrievers.hipporag.mode", "rank_passages"),
    ("  expanded items", "lightrag_prism.retrievers.prism.mode", "_expanded_items"),
    (TOKENIZER, "lightrag_prism.backends.tokenizer", "OfflineTokenizer.encode"),
)
# --fine: parts of the stages above, labelled by depth (two spaces: a part of the retriever, four: a part of the
# part above).
FINE_STAGES = (
    ("  linking (facts and names)", "lightrag_prism.retrievers.prism.mode", "_linked_seeds"),
    ("  dense passage scores", "lightrag_prism.retrievers.views.passage_graph", "HippoGraph.dense_scores"),
    ("    per-query weights", "lightrag_prism.retrievers.views.passage_rank", "PassageGraph.weighted"),
    ("    CG solve", "lightrag_prism.graph.ppr_cg", "solve"),
    ("  top nodes", "lightrag_prism.retrievers.prism.expand", "top_non_seed"),
    ("  fusion", "lightrag_prism.retrievers.prism.expand", "fuse_ranked"),
    ("  multi-hop paths", "lightrag_prism.retrievers.prism.expand", "path_to_seed"),
    ("  seed and fact items", "lightrag_prism.retrievers.prism.mode", "_linked_items"),
    ("  ranked chunks", "lightrag_prism.retrievers.prism.mode", "_ranked_chunks"),
)
FINE_LABELS = frozenset(label for label, _, _ in FINE_STAGES)
RETRIEVER_REST = "  rest of the retriever"
REST = "LightRAG context and the rest"
MODES = ("naive", "prism", "hipporag")


class StageTimes:
    """Seconds per stage label for the query running now (``start``), kept per mode."""

    def __init__(self, fine: bool = False) -> None:
        self.stages = STAGES + FINE_STAGES if fine else STAGES
        # with --fine: the retriever's parts on the query's path, whose sum "rest of the retriever" leaves out
        self.retriever_parts = list(dict.fromkeys(
            label for label, _, _ in self.stages if label.startswith("  ") and label[2] != " " and label != FASTRP
        )) if fine else None
        self.current: dict[str, float] = defaultdict(float)
        self.per_mode: dict[str, list[dict[str, float]]] = defaultdict(list)

    def start(self) -> None:
        self.current = defaultdict(float)

    def finish(self, mode: str, total: float) -> None:
        stages = dict(self.current)
        stages["whole query"] = total
        stages[REST] = total - sum(stages.get(k, 0.0) for k in (EMBED, RETRIEVER, TOKENIZER))
        if self.retriever_parts is not None and RETRIEVER in stages:
            stages[RETRIEVER_REST] = stages[RETRIEVER] - sum(stages.get(label, 0.0) for label in self.retriever_parts)
        self.per_mode[mode].append(stages)

    def timed(self, label: str, fn):
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapper(*args, **kwargs):
                start, embedding = time.perf_counter(), self.current[EMBED]
                try:
                    return await fn(*args, **kwargs)
                finally:
                    # the retriever embeds the question itself: that time is the embedding's, counted once
                    inner = self.current[EMBED] - embedding if label == RETRIEVER else 0.0
                    self.current[label] += time.perf_counter() - start - inner
        else:
            query_path_only = label != FASTRP  # the FastRP thread's own calls (its top nodes) are FastRP's time

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                if query_path_only and threading.current_thread().name.startswith(FASTRP_THREAD):
                    return fn(*args, **kwargs)
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.current[label] += time.perf_counter() - start
        return wrapper

    @contextlib.contextmanager
    def installed(self):
        """Every stage's attribute replaced by its timed wrapper while inside (a missing one raises: the stages
        moved), the originals put back after."""
        originals = []
        try:
            for label, module_name, attribute in self.stages:
                owner = importlib.import_module(module_name)
                *path, name = attribute.split(".")
                for part in path:
                    owner = getattr(owner, part)
                originals.append((owner, name, getattr(owner, name)))
                setattr(owner, name, self.timed(label, originals[-1][2]))
            yield self
        finally:
            for owner, name, original in reversed(originals):
                setattr(owner, name, original)

    def medians(self) -> dict[str, dict[str, float]]:
        """Per mode: the median ms per query of each stage (0 where a query did not run it)."""
        out = {}
        for mode, queries in self.per_mode.items():
            labels = dict.fromkeys(label for q in queries for label in q)
            out[mode] = {label: round(1000 * statistics.median(q.get(label, 0.0) for q in queries), 2)
                         for label in labels}
        return out

    def p95(self) -> dict[str, float]:
        """Per mode: the p95 ms of the whole query (numpy's linear interpolation between ranks)."""
        return {mode: round(1000 * float(np.percentile([q["whole query"] for q in queries], 95)), 2)
                for mode, queries in self.per_mode.items()}


async def profile(rag, dataset, modes: list[str], questions: int, times: StageTimes) -> None:
    """Each question to each mode on one index; times kept under the mode's name."""
    await profile_versus_own({"": rag}, dataset, modes, questions, times)


async def profile_versus_own(rags: dict[str, object], dataset, modes: list[str], questions: int,
                             times: StageTimes) -> None:
    """Each question to every mode on every index (``rags``: name -> instance), the (mode, index) pairs in rotating
    order so that none is always first, each cold; times kept under ``"<mode> <index>"`` (the mode alone for an
    index named "")."""
    lookup = passage_lookup(dataset)
    asked = dataset.questions[:questions]
    pairs = [(mode, name) for name in rags for mode in modes]
    for question in asked[:3]:  # warm-up: views, first-use imports, a variant's own
        for mode, name in pairs:
            base_mode, _, variant = mode.partition("~")
            spec, knobs = parse_mode_spec(base_mode)
            with VARIANTS[variant](rags[name]) if variant else contextlib.nullcontext():
                await _rank_with_mode(rags[name], spec, question.text, lookup, knobs)
    for i, question in enumerate(asked):
        for mode, name in pairs[i % len(pairs):] + pairs[:i % len(pairs)]:
            forget_query_caches(rags[name])
            base_mode, _, variant = mode.partition("~")
            spec, knobs = parse_mode_spec(base_mode)  # "prism:thin_graph_relations=0": a mode with knobs
            with VARIANTS[variant](rags[name]) if variant else contextlib.nullcontext():
                times.start()
                start = time.perf_counter()
                await _rank_with_mode(rags[name], spec, question.text, lookup, knobs)
                times.finish(f"{mode} {name}".strip(), time.perf_counter() - start)


@contextlib.contextmanager
def unpinned(tokenizer):
    """The tokenizer without its pinned segments while inside (they are put back after)."""
    pinned, tokenizer._pinned = tokenizer._pinned, {}
    try:
        yield
    finally:
        tokenizer._pinned = pinned


_COLUMN_MAJOR: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id -> (FastRP embedding, its column-major copy)


@contextlib.contextmanager
def fastrp_inline():
    """``prism``'s FastRP scored on the query's own thread while inside: OpenBLAS's matrix-vector product (both
    cores) over a column-major copy of the embedding, made once per embedding (by the warm-up's queries)."""
    from lightrag_prism.retrievers.prism import expand

    beside = expand.start_fastrp

    def start_inline(snap, previous, seeds, weights, k):
        cache = expand.fastrp_cache(snap, previous)
        embedding = cache.state.embedding
        column_major = _COLUMN_MAJOR.get(id(embedding), (None, None))[1]
        if column_major is None:  # the row-major array is kept beside its copy, so its id is not reused
            column_major = np.asfortranarray(embedding)
            _COLUMN_MAJOR[id(embedding)] = (embedding, column_major)
        weights = np.maximum(weights, 1e-12)
        centroid = (weights @ column_major[cache.state_rows[seeds]]) / weights.sum()
        scores = (column_major @ centroid.astype(column_major.dtype))[cache.state_rows]
        done = Future()
        done.set_result(expand.top_non_seed(scores, seeds, k))
        return done

    expand.start_fastrp = start_inline
    try:
        yield
    finally:
        expand.start_fastrp = beside


VARIANTS = {"unpinned": lambda rag: unpinned(rag.tokenizer), "fastrp-inline": lambda rag: fastrp_inline()}


def ratios(medians: dict[str, dict[str, float]], modes: list[str], names: list[str]) -> dict[str, float]:
    """Whole-query ratios of :func:`profile_versus_own`'s medians: each mode against ``naive`` on each index, and
    each mode's first index against its second (pooled/own)."""
    whole = {key: stages["whole query"] for key, stages in medians.items()}
    out = {}
    for name in names:
        for mode in modes:
            if mode != "naive" and "naive" in modes:
                out[f"{mode}/naive {name}"] = round(whole[f"{mode} {name}"] / whole[f"naive {name}"], 3)
    first, second = names[:2]
    for mode in modes:
        out[f"{mode} {first}/{second}"] = round(whole[f"{mode} {first}"] / whole[f"{mode} {second}"], 3)
    return out


def table(medians: dict[str, dict[str, float]], modes: list[str], stages=STAGES) -> str:
    rows = ["| stage (median ms per query) | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for label in _display_order(stages):
        cells = [medians[m].get(label) for m in modes]
        if any(cells):
            depth = (len(label) - len(label.lstrip(" "))) // 2  # a stage inside the retriever, a part of one
            name = "- " * depth + label.strip()
            rows.append(f"| {name} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells) + " |")
    if "naive" in modes:
        base = medians["naive"]["whole query"]
        rows.append("| whole query / naive's | " + " | ".join(f"{medians[m]['whole query'] / base:.2f}x"
                                                             for m in modes) + " |")
    return "\n".join(rows)


def _display_order(stages) -> list[str]:
    """The table's rows: the retriever's parts after it (the four-space parts after the PPR, whose function calls
    them; the rest of the retriever last among them when ``--fine`` parts are timed), then the tokenizer and the
    rest."""
    labels = [label for label in dict.fromkeys(label for label, _, _ in stages) if label != TOKENIZER]
    fine = not FINE_LABELS.isdisjoint(labels)
    order = []
    for label in labels:
        if not label.startswith("    "):
            order.append(label)
        if label == PPR:
            order.extend(part for part in labels if part.startswith("    "))
    return order + ([RETRIEVER_REST] if fine else []) + [TOKENIZER, REST, "whole query"]


def _p95_line(p95: dict[str, float], keys: list[str]) -> str:
    return "p95 whole query (ms): " + ", ".join(f"{key} {p95[key]:.1f}" for key in keys if key in p95)


async def run(args) -> dict:
    pooled, sets = pooled_dataset(False)
    dataset = sets[args.set]
    modes = [m for m in args.modes.split(",") if m]
    if args.unpinned:
        modes += [f"{m}~unpinned" for m in modes if m != "naive"]
    if args.fastrp_inline and "prism" in modes:
        modes.append("prism~fastrp-inline")
    pooled_where = Path(args.working_dir) / f"{pooled.name}-{len(pooled.passages)}"
    if args.versus_own:
        return await run_versus_own(args, dataset, modes, pooled, pooled_where)
    if args.own_index:
        where, data = Path(args.own_index) / f"{dataset.name}-{len(dataset.passages)}-text", dataset
    else:
        where, data = pooled_where, pooled
    rag = await open_index(data, where, text_only=True)
    times = StageTimes(fine=args.fine)
    try:
        with times.installed():
            await profile(rag, dataset, modes, args.questions, times)
    finally:
        await rag.finalize_storages()
    medians = times.medians()
    report = {"index": str(where), "set": args.set, "questions": min(args.questions, len(dataset.questions)),
              "stages_ms": medians, "p95_ms": times.p95()}
    print(f"{args.set}, {report['questions']} questions, index {where}\n" + table(medians, modes, times.stages)
          + "\n" + _p95_line(report["p95_ms"], modes))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report


async def run_versus_own(args, dataset, modes: list[str], pooled, pooled_where: Path) -> dict:
    own_where = Path(args.versus_own) / f"{dataset.name}-{len(dataset.passages)}-text"
    rags = {"pooled": await open_index(pooled, pooled_where, text_only=True)}
    times = StageTimes(fine=args.fine)
    try:
        rags["own"] = await open_index(dataset, own_where, text_only=True)
        with times.installed():
            await profile_versus_own(rags, dataset, modes, args.questions, times)
    finally:
        for rag in rags.values():
            await rag.finalize_storages()
    medians = times.medians()
    report = {"index": str(pooled_where), "own_index": str(own_where), "set": args.set,
              "questions": min(args.questions, len(dataset.questions)), "stages_ms": medians,
              "p95_ms": times.p95(), "ratios": ratios(medians, modes, ["pooled", "own"])}
    columns = [f"{mode} {name}" for name in ("pooled", "own") for mode in modes]
    print(f"{args.set}, {report['questions']} questions, {pooled_where} and {own_where}, paired\n"
          + table(medians, columns, times.stages) + "\n" + _p95_line(report["p95_ms"], columns) + "\n"
          + "\n".join(f"{k}: {v:.2f}x" for k, v in report["ratios"].items()))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--working-dir", default="prism_storage/bench", help="bench_pooled.py's working dir")
    parser.add_argument("--own-index", metavar="DIR", help="profile the set's own index in DIR instead")
    parser.add_argument("--versus-own", metavar="DIR", help="profile the pooled index and the set's own index in DIR "
                                                            "in one process, paired question by question")
    parser.add_argument("--set", default="hotpotqa", choices=("musique", "hotpotqa"))
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--unpinned", action="store_true", help="also time each mode but naive without the "
                                                                 "tokenizer's pinned description tokens, paired")
    parser.add_argument("--fastrp-inline", action="store_true", help="also time prism with FastRP scored on the "
                        "query's own thread (stop 61's code), paired")
    parser.add_argument("--fine", action="store_true", help="also time the retriever's smaller parts (linking, "
                        "the PPR's weights and solve, top nodes, fusion, paths, items)")
    parser.add_argument("--out", help="write the medians as JSON here")
    args = parser.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
