"""The ``lightrag-prism`` command: index files, query them, run the benchmark or the offline demo.

    lightrag-prism index docs/ notes.txt --working-dir ./prism_storage
    lightrag-prism query "Who founded Acme?" --mode prism --working-dir ./prism_storage
    lightrag-prism bench --questions 100
    lightrag-prism demo

The LLM comes from the environment (see ``backends.openai_compat``); without one, indexing uses the offline
heuristic extractor and ``query`` prints the retrieved context instead of an answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from .errors import LLM_SETUP_HINT, LLMNotConfiguredError

TEXT_SUFFIXES = (".txt", ".md", ".html", ".htm")


class CLIError(Exception):
    """A user error reported as one line, without a traceback."""


def collect_files(paths: list[str]) -> list[tuple[Path, str]]:
    """The non-empty text files under ``paths``, with their content (read once)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CLIError(f"No such file or directory: {raw}")
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES and p.is_file())
        else:
            files.append(path)
    texts = [(f, text) for f in files if (text := f.read_text(encoding="utf-8", errors="replace")).strip()]
    if not texts:
        raise CLIError(f"Nothing to index: no non-empty {'/'.join(TEXT_SUFFIXES)} files in {', '.join(paths)}")
    return texts


def make_rag(working_dir: str):
    from . import PrismRAG, embedding_from_env, llm_from_env, local_embedding_func

    return PrismRAG(working_dir=working_dir, llm_model_func=llm_from_env(),
                    embedding_func=embedding_from_env() or local_embedding_func(), embedding_batch_num=64)


async def cmd_index(args) -> None:
    from tqdm.auto import tqdm

    files = collect_files(args.paths)
    Path(args.working_dir).mkdir(parents=True, exist_ok=True)
    rag = make_rag(args.working_dir)
    if not rag.llm_configured:
        print("No LLM configured: using the offline heuristic extractor (capitalised phrases, sentence "
              "co-occurrence). For LLM extraction:\n" + LLM_SETUP_HINT, file=sys.stderr)
    await rag.initialize_storages()
    try:
        for path, text in tqdm(files, desc="indexing", unit="file"):
            await rag.ainsert(text, file_paths=[str(path)])
        snapshot = await rag.graph_snapshot()
        print(f"Indexed {len(files)} file(s) into {args.working_dir}: "
              f"{snapshot.num_nodes} entities, {snapshot.num_edges} relations")
    finally:
        await rag.finalize_storages()


async def cmd_query(args) -> None:
    from . import PrismQueryParam

    if not Path(args.working_dir).is_dir():
        raise CLIError(f"Working dir {args.working_dir!r} does not exist: run `lightrag-prism index PATH "
                       f"--working-dir {args.working_dir}` first")
    rag = make_rag(args.working_dir)
    await rag.initialize_storages()
    try:
        param = PrismQueryParam(mode=args.mode, enable_rerank=False)
        if args.context_only or not rag.llm_configured:
            if not args.context_only:
                print("No LLM configured: showing the retrieved context instead of an answer.\n"
                      + LLM_SETUP_HINT + "\n", file=sys.stderr)
            print(json.dumps(await rag.aquery_data(args.question, param), indent=2, ensure_ascii=False,
                             default=str))
        else:
            print(await rag.aquery(args.question, param))
    finally:
        await rag.finalize_storages()


def build_parser() -> argparse.ArgumentParser:
    from .eval import bench, demo
    from .retrievers import valid_modes

    parser = argparse.ArgumentParser(prog="lightrag-prism", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("index", help="index text/markdown/HTML files or folders")
    p.add_argument("paths", nargs="+")
    p.add_argument("--working-dir", default="./prism_storage")
    p = sub.add_parser("query", help="query an index")
    p.add_argument("question")
    p.add_argument("--mode", default="mix", choices=valid_modes())
    p.add_argument("--working-dir", default="./prism_storage")
    p.add_argument("--context-only", action="store_true", help="print the retrieved data, no answer")
    bench.build_parser(sub.add_parser("bench", help="benchmark every mode on a bundled dataset"))
    demo.build_parser(sub.add_parser("demo", help="offline demo: index the bundled sample, query every mode"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    try:
        if args.command == "index":
            asyncio.run(cmd_index(args))
        elif args.command == "query":
            asyncio.run(cmd_query(args))
        elif args.command == "bench":
            from .eval.bench import run_from_args

            run_from_args(args)
        else:
            from .eval.demo import run_from_args

            run_from_args(args)
    except (CLIError, LLMNotConfiguredError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
