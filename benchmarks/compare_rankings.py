"""Do two versions of lightrag_prism rank the same index the same way? For refactors that must change nothing.

    git worktree add /tmp/before <commit>
    python benchmarks/compare_rankings.py --before /tmp/before

Builds one index with this checkout (the first ``--passages`` of the bundled 2WikiMultihopQA corpus, offline
extractor, a hashed embedder; then one document deleted, so the rebuild path runs too), copies it, and queries each
copy in a fresh process of each version with the same ``--questions`` in every mode listed: the ranked chunk ids and
entity names of every answer must be equal. Comparing two builds instead would compare LightRAG's concurrent
insert, which merges descriptions in whatever order documents finish. Prints per mode how many answers are equal.

``--with-journals``: the index is built by the other version and left as a crash leaves it (no
``finalize_storages``: every file with its journal), and both versions query that same directory (a copy would have
another inode, which makes a journal stale), each exiting without ``finalize_storages``: does this version open an
index the other one wrote, journals included, and rank it the same?
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "lightrag_prism" / "data" / "2wikimultihopqa_corpus" / "2wikimultihopqa_corpus.json"
MODES = ("naive", "local", "mix", "prism", "hipporag", "ensemble", "tournament", "fidelis")


def staged(checkout: Path, into: Path) -> Path:
    """The checkout's package as an importable tree (``patches/`` is installed as ``lightrag_prism.patches``)."""
    shutil.copytree(checkout / "lightrag_prism", into / "lightrag_prism")
    shutil.copytree(checkout / "patches", into / "lightrag_prism" / "patches")
    return into


async def run(step: str, working_dir: str, passages: int, questions: int, modes: list[str], leave: bool) -> None:
    sys.path.append(str(HERE.parent))  # tests.helpers (the hashed embedder); lightrag_prism stays the one chosen
    from lightrag.base import DocStatus

    from lightrag_prism import LightRAG, QueryParam
    from tests.helpers import hash_embedding_func

    corpus = json.loads(CORPUS.read_text())[:passages]
    rag = LightRAG(working_dir=working_dir, workspace="rank", embedding_func=hash_embedding_func(64))
    await rag.initialize_storages()
    try:
        if step == "build":
            await rag.ainsert([p["title"] + "\n" + p["text"] for p in corpus])
            await rag.adelete_by_doc_id(sorted(await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED]))[0])
            if leave:
                os._exit(0)  # as a crash leaves it: the journals stay
            return
        asked = [f"Who is {p['title']} and where is it from?" for p in corpus[::max(1, passages // questions)]]
        ranks = {}
        for mode in modes:
            ranks[mode] = []
            for question in asked[:questions]:
                data = (await rag.aquery_data(question, param=QueryParam(mode=mode, top_k=10, chunk_top_k=10)))
                data = data.get("data") or {}
                ranks[mode].append([c.get("chunk_id") for c in data.get("chunks", [])]
                                   + [e.get("entity_name") for e in data.get("entities", [])])
        print(json.dumps(ranks), flush=True)
        if leave:
            os._exit(0)  # the next version opens the same files, journals included
    finally:
        await rag.finalize_storages()


def in_process(package_root: Path | None, *args: str) -> str:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    done = subprocess.run([sys.executable, __file__, "--step", *args], env=env, capture_output=True, text=True,
                          check=False, cwd=tempfile.gettempdir())
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the other version (git worktree)")
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--with-journals", action="store_true", help="the other version builds, leaving journals")
    parser.add_argument("--step", nargs=2, metavar=("STEP", "DIR"), help=argparse.SUPPRESS)  # internal
    args = parser.parse_args()
    modes = args.modes.split(",")
    if args.step:
        asyncio.run(run(args.step[0], args.step[1], args.passages, args.questions, modes, args.with_journals))
        return
    if args.before is None:
        parser.error("--before is required")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sizes = ["--passages", str(args.passages), "--questions", str(args.questions), "--modes", args.modes]
        other = staged(args.before, root / "pkg")
        if args.with_journals:
            sizes.append("--with-journals")
            index = str(root / "index")
            in_process(other, "build", index, *sizes)
            journals = sorted(p.name for p in (root / "index" / "rank").glob("*.prism-journal"))
            print(f"built by the other version, left with {len(journals)} journals: {', '.join(journals)}")
            before = json.loads(in_process(other, "query", index, *sizes))
            now = json.loads(in_process(None, "query", index, *sizes))
        else:
            in_process(None, "build", str(root / "index"), *sizes)
            for side in ("before", "now"):
                shutil.copytree(root / "index", root / side)
            before = json.loads(in_process(other, "query", str(root / "before"), *sizes))
            now = json.loads(in_process(None, "query", str(root / "now"), *sizes))
    print("| mode | answers ranked the same |\n|---|---|")
    for mode in modes:
        print(f"| {mode} | {sum(a == b for a, b in zip(before[mode], now[mode]))} of {len(now[mode])} |")


if __name__ == "__main__":
    main()
