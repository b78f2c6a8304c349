"""Offline insert cost as the corpus grows, against stock LightRAG with the same extractor and embedder.

    python benchmarks/bench_insert.py                       # 100, 1,000 and 3,000 passages; stock at 100 and 1,000
    python benchmarks/bench_insert.py --sizes 100,1000,3000 --baseline-sizes 100,1000,3000
    python benchmarks/bench_insert.py --sizes 3000 --baseline-sizes "" --profile   # where the time goes

Corpus: the bundled 2WikiMultihopQA passages (text only, ``title + "\\n" + text``), one document per passage, all
in one list ``ainsert``. Each size starts from an empty working dir. Both sides run without an LLM, with the
offline spaCy extractor and the local all-MiniLM-L6-v2 embedder (``embedding_batch_num=64``, no gleaning):

* ``prism``: ``lightrag_prism.LightRAG`` with no ``llm_model_func`` (its defaults);
* ``stock``: ``lightrag.LightRAG`` with ``llm_model_func=offline_llm("spacy")`` (the same extractor answering
  LightRAG's extraction prompts) and the same embedder and tokenizer, LightRAG's own storage writers (the faster
  writers of ``patches/fast_json.py`` and ``fast_graphml.py`` are undone for it) and its default concurrency.

The time covers ``ainsert`` and ``finalize_storages`` (everything durable). It prints passages/s, ms per passage and
the ratio of the per-passage cost at each size to the smallest size, then, for prism, the first ``prism`` and
``hipporag`` query after the insert against the median of warm queries, and the same after a second, small
insert (``--followup`` passages). Writes ``benchmarks/results/bench_insert.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_json  # noqa: E402

from lightrag_prism.eval.datasets import load_2wiki_corpus  # noqa: E402

QUERY_MODES = ("prism", "hipporag")
WARM_QUERIES = 5


def documents(passages) -> tuple[list[str], list[str]]:
    return [p.content for p in passages], [p.id for p in passages]


# LightRAG's JSON storages share their in-memory data across instances of one process by (namespace, workspace):
# every run gets its own workspace.
def make_prism(working_dir: str):
    from lightrag_prism import LightRAG, local_embedding_func

    return LightRAG(working_dir=working_dir, workspace=Path(working_dir).name, embedding_func=local_embedding_func(),
                    embedding_batch_num=64, entity_extract_max_gleaning=0)


def make_stock(working_dir: str):
    from lightrag import LightRAG

    from lightrag_prism.backends import OfflineTokenizer, local_embedding_func
    from lightrag_prism.backends.offline_llm import offline_llm, offline_model_name

    return LightRAG(working_dir=working_dir, workspace=Path(working_dir).name, llm_model_func=offline_llm("spacy"),
                    llm_model_name=offline_model_name("spacy"), tokenizer=OfflineTokenizer(),
                    embedding_func=local_embedding_func(), embedding_batch_num=64, entity_extract_max_gleaning=0)


async def timed_insert(rag, passages) -> float:
    texts, ids = documents(passages)
    await rag.initialize_storages()
    start = time.perf_counter()
    await rag.ainsert(texts, ids=ids, file_paths=[f"2wiki/{i}" for i in ids])
    await rag.finalize_storages()
    return time.perf_counter() - start


async def query_ms(rag, mode: str, question: str) -> float:
    from lightrag_prism import QueryParam

    start = time.perf_counter()
    result = await rag.aquery_data(question, QueryParam(mode=mode, enable_rerank=False))
    if result.get("status") != "success":
        raise RuntimeError(f"{mode} query failed: {result.get('message')}")
    return (time.perf_counter() - start) * 1000


def questions_about(passages, n: int) -> list[str]:
    step = max(1, len(passages) // n)
    return [f"What is known about {p.title}?" for p in passages[::step][:n]]


async def first_vs_warm(rag, passages, label: str) -> dict:
    """For each mode: the first query's ms and the median of ``WARM_QUERIES`` later ones (other questions)."""
    out = {}
    questions = questions_about(passages, WARM_QUERIES + 1)
    for mode in QUERY_MODES:
        first = await query_ms(rag, mode, questions[0])
        warm = statistics.median([await query_ms(rag, mode, q) for q in questions[1:]])
        out[mode] = {"first_ms": round(first, 1), "warm_ms": round(warm, 1), "ratio": round(first / warm, 2)}
        print(f"  {label:<22} {mode:<9} first {first:8.1f} ms  warm {warm:7.1f} ms  ratio {first / warm:5.2f}",
              flush=True)
    return out


async def run_prism(passages, followup, work: Path) -> dict:
    rag = make_prism(str(work))
    seconds = await timed_insert(rag, passages)
    stats = await index_stats(rag)
    await rag.initialize_storages()
    try:
        queries = {"after_insert": await first_vs_warm(rag, passages, f"after {len(passages)}")}
        if followup:
            texts, ids = documents(followup)
            start = time.perf_counter()
            await rag.ainsert(texts, ids=ids, file_paths=[f"2wiki/{i}" for i in ids])
            queries["followup_insert_seconds"] = round(time.perf_counter() - start, 1)
            print(f"  insert of +{len(followup)} took {queries['followup_insert_seconds']} s", flush=True)
            queries["after_followup"] = await first_vs_warm(rag, passages, f"after +{len(followup)}")
    finally:
        await rag.finalize_storages()
    return {"seconds": seconds, "graph": stats, "queries": queries}


async def index_stats(rag) -> dict:
    await rag.initialize_storages()
    snapshot = await rag.graph_snapshot()
    return {"entities": snapshot.num_nodes, "relations": snapshot.num_edges}


async def run_stock(passages, work: Path) -> dict:
    from lightrag_prism.patches.stock_writers import stock_storage_writers

    with stock_storage_writers():
        return {"seconds": await timed_insert(make_stock(str(work)), passages)}


def warm_up() -> str:
    """Start the embedder's worker process and load spaCy before anything is timed (one-off process costs)."""
    from lightrag_prism.backends import local_embedding_func
    from lightrag_prism.backends.local_embedder import worker_precision
    from lightrag_prism.insert.extraction import get_extractor

    get_extractor("spacy")
    asyncio.run(local_embedding_func().func(["warm up"]))
    return worker_precision()


def report_line(side: str, n: int, seconds: float, base_ms: float | None) -> str:
    ms = 1000 * seconds / n
    ratio = f"{ms / base_ms:5.2f}x" if base_ms else "  1.00x"
    return f"| {side} | {n} | {seconds:8.1f} | {n / seconds:6.1f} | {ms:7.1f} | {ratio} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--baseline-sizes", default="100,1000", help="sizes stock LightRAG runs at ('' for none)")
    parser.add_argument("--followup", type=int, default=20, help="passages of the second insert before re-querying")
    parser.add_argument("--work", default=None, help="working dir root (default: a temporary dir)")
    parser.add_argument("--profile", action="store_true", help="cProfile the prism insert at the largest size")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    baseline = sorted(int(s) for s in args.baseline_sizes.split(",") if s.strip())
    corpus = load_2wiki_corpus()
    if max(sizes + baseline) + args.followup > len(corpus):
        raise SystemExit(f"the corpus has {len(corpus)} passages")
    root = Path(args.work or tempfile.mkdtemp(prefix="bench_insert_"))
    results = {"corpus": "2wikimultihopqa", "embedder_precision": warm_up(), "prism": {}, "stock": {}}
    print(f"embedder precision: {results['embedder_precision']}", flush=True)
    rows = []
    for n in sizes:
        passages, followup = corpus[:n], corpus[n:n + args.followup]
        work = root / f"prism-{n}"
        shutil.rmtree(work, ignore_errors=True)
        profiler = cProfile.Profile() if args.profile and n == sizes[-1] else None
        if profiler:
            profiler.enable()
        results["prism"][n] = asyncio.run(run_prism(passages, followup, work))
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        rows.append(("prism", n, results["prism"][n]["seconds"]))
        print(rows[-1], results["prism"][n]["graph"], flush=True)
        if n in baseline:
            work = root / f"stock-{n}"
            shutil.rmtree(work, ignore_errors=True)
            results["stock"][n] = asyncio.run(run_stock(passages, work))
            rows.append(("stock", n, results["stock"][n]["seconds"]))
            print(rows[-1], flush=True)
    print("\n| side | passages | seconds | passages/s | ms/passage | cost vs smallest |\n|---|---|---|---|---|---|")
    for side in ("prism", "stock"):
        side_rows = [r for r in rows if r[0] == side]
        base_ms = 1000 * side_rows[0][2] / side_rows[0][1] if side_rows else None
        for _, n, seconds in side_rows:
            print(report_line(side, n, seconds, base_ms))
    for n in baseline:
        if n in results["prism"]:
            print(f"stock / prism time at {n}: {results['stock'][n]['seconds'] / results['prism'][n]['seconds']:.2f}x")
    write_json("bench_insert", results)
    if not args.work:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
