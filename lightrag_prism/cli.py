"""The ``lightrag-prism`` command: index files, query them, run the benchmark or the offline demo.

    lightrag-prism index docs/ notes.txt --working-dir ./prism_storage
    lightrag-prism query "Who founded Acme?" --mode prism --working-dir ./prism_storage --top-k 20 ppr_damping=0.6
    lightrag-prism bench --questions 100
    lightrag-prism demo
    lightrag-prism serve --working-dir ./prism_storage --port 9621   # LightRAG Server + the explorer at /prism

The LLM comes from the environment (see ``backends.openai_compat``); without one, indexing uses the offline
extractor and ``query`` prints the retrieved context instead of an answer. ``query`` runs the plugin's ``prism``
mode unless ``--mode`` names another. Every failure is one line on stderr and exit code 2; ``index`` exits 3 when
it skipped some files (each named on stderr with why) and indexed the rest; ``-v`` shows LightRAG's INFO logs and the
traceback of a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import textwrap
from pathlib import Path

from .citations.layout import mark_pages
from .citations.store import citation_label
from .inputs import SUPPORTED_SUFFIXES, InputError, collect_documents, source_names

EXIT_ERROR = 2
EXIT_PARTIAL = 3  # index: some files were skipped or read in part (each named on stderr), the rest is indexed
KNOWN_ERRORS = ("LLMNotConfiguredError", "LLMCallError")  # their message already says what failed and what to do


class CLIError(Exception):
    """A user error reported as one line, without a traceback."""


NO_LLM_LINE = "No LLM configured (set PRISM_LLM_MODEL, and OPENAI_BASE_URL for a local server): {what}"
CONTEXT_ONLY_HINT = "; `--context-only` prints the retrieved passages without calling the LLM"
EXCERPT_CHARS = 200  # about two lines of a passage under each ranked result
DEFAULT_MODE = "prism"  # the plugin's own retrieval, offline or with an LLM (LightRAG's QueryParam defaults to mix)

# What the score printed beside a passage means in each mode (query --help, the legend line, docs/usage.md).
GRAPH_WALK_SCORE = "above 1: dense retrieval's top passages, kept first; below 1: share of the graph walk (PageRank)"
SCORE_MEANINGS = {
    "prism": GRAPH_WALK_SCORE,
    "hipporag": GRAPH_WALK_SCORE,
    "fidelis": "a reasoning path's score, or 1/(60 + rank) where dense and path rankings are fused (0: dense "
               "retrieval's top passages, kept first)",
    "ensemble": "retrieval score fused with the LLM's listwise rerank score (without an LLM: retrieval score)",
    "tournament": "wins in the pairwise LLM tournament, scaled to 0-1 (without an LLM: 1 - rank/n of dense retrieval)",
}
STOCK_ORDER = "LightRAG's own order (its modes put no score on a passage)"
FOUND_BY_MEANINGS = {"dense": "vector similarity", "bm25": "the question's words (BM25)", "ppr": "graph walk",
                     "fact": "a matching fact", "seed": "a named entity", "fidelis": "a reasoning path",
                     "listwise": "LLM rerank", "tournament": "LLM comparisons"}


def make_rag(working_dir: str):
    from . import PrismRAG, llm_from_env
    from .backends import EMBEDDING_BATCH, default_embedding_func

    # stock_mode_llm_fallbacks: every mode, the default mix included, fails the same way on a dead LLM (LLMCallError)
    return PrismRAG(working_dir=working_dir, llm_model_func=llm_from_env(), embedding_func=default_embedding_func(),
                    embedding_batch_num=EMBEDDING_BATCH, stock_mode_llm_fallbacks=True)


def check_working_dir(working_dir: str, *, for_query: bool) -> None:
    path = Path(working_dir)
    if path.exists() and not path.is_dir():
        raise CLIError(f"Working dir {working_dir!r} is a file, not a directory: pass a directory with --working-dir")
    if not for_query:
        return
    if not path.exists():
        raise CLIError(f"Working dir {working_dir!r} does not exist: run `lightrag-prism index PATH "
                       f"--working-dir {working_dir}` first")
    if not any(path.glob("kv_store_doc_status.json")) and not any(path.glob("*/kv_store_doc_status.json")):
        raise CLIError(f"Working dir {working_dir!r} holds no index (nothing was ever indexed there): run "
                       f"`lightrag-prism index PATH --working-dir {working_dir}` first")


async def cmd_index(args) -> int:
    """Index every readable file; a file that cannot be indexed is named with its reason and skipped (exit
    EXIT_PARTIAL), never a reason to drop the rest."""
    from .progress import insert_outcome, insert_progress

    check_working_dir(args.working_dir, for_query=False)
    collected = collect_documents(args.paths)
    for refused in collected.refused:
        print(f"skipped {refused}", file=sys.stderr)
    for partial in collected.partial:
        print(f"partly read {partial}", file=sys.stderr)
    if not collected.documents:
        raise CLIError(f"Nothing to index: no {'/'.join(SUPPORTED_SUFFIXES)} file with text in "
                       f"{', '.join(args.paths)}" + (" (each file is listed above with why)" if collected.refused
                                                     else ""))
    Path(args.working_dir).mkdir(parents=True, exist_ok=True)
    rag = make_rag(args.working_dir)
    if not rag.llm_configured:
        print(NO_LLM_LINE.format(what="indexing with the offline extractor"), file=sys.stderr)
    await rag.initialize_storages()
    try:
        names = source_names([path for path, _ in collected.documents])
        texts = [mark_pages(text) for _, text in collected.documents]  # as stored (compared by insert_outcome)
        async with insert_progress(rag, len(texts), "indexing", unit="file", disable=args.quiet):
            track_id = await rag.ainsert(texts, file_paths=names)
        outcome = await insert_outcome(rag, track_id, dict(zip(names, texts)))
        snapshot = await rag.graph_snapshot()
        print(f"Indexed {len(outcome.processed)} file(s) into {args.working_dir}: "
              f"{snapshot.num_nodes} entities, {snapshot.num_edges} relations"
              + (f"; {len(outcome.already_indexed)} already indexed" if outcome.already_indexed else ""))
        for path, error in outcome.failed.items():
            print(f"failed {path}: {error}", file=sys.stderr)
        if outcome.failed:
            raise CLIError(f"{len(outcome.failed)} file(s) not indexed (listed above)")
    finally:
        await rag.finalize_storages()
    if collected.refused or collected.partial:
        read_in_part = f", {len(collected.partial)} read in part" if collected.partial else ""
        print(f"{len(collected.refused)} file(s) skipped{read_in_part} (listed above); the others are indexed",
              file=sys.stderr)
        return EXIT_PARTIAL
    return 0


def query_param(args):
    from . import PrismQueryParam
    from .eval.bench import parse_mode_spec

    _, knobs = parse_mode_spec(":".join([args.mode, *args.knobs]))
    for name in ("top_k", "chunk_top_k"):
        if getattr(args, name) is not None:
            knobs[name] = getattr(args, name)
    return PrismQueryParam(mode=args.mode, enable_rerank=False, **knobs)


async def cmd_query(args) -> None:
    param = query_param(args)
    check_working_dir(args.working_dir, for_query=True)
    rag = make_rag(args.working_dir)
    await rag.initialize_storages()
    try:
        answer = rag.llm_configured and not args.context_only
        if not rag.llm_configured and not args.context_only:
            print(NO_LLM_LINE.format(what="retrieval only"), file=sys.stderr)
        result = await (rag.aquery_llm(args.question, param) if answer else rag.aquery_data(args.question, param))
        if args.json:
            result.get("llm_response", {}).pop("response_iterator", None)
            print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
            return
        if result.get("status") != "success":
            raise CLIError(f"nothing retrieved ({result.get('message') or 'no result'})")
        if answer:
            print((result.get("llm_response") or {}).get("content") or "(the LLM gave no answer)")
            print()
        print(ranked_passages(result["data"].get("chunks", []), param.mode, args.question))
    finally:
        await rag.finalize_storages()


def ranked_passages(chunks: list[dict], mode: str, question: str) -> str:
    """A legend line, then per passage: rank, source file, score and what found it (where the mode says), and about
    two lines of its text around the sentence that shares the most words with the question."""
    if not chunks:
        return "No passage retrieved."
    lines = [passage_legend(chunks, mode)]
    for rank, chunk in enumerate(chunks, start=1):
        score, found_by = chunk.get("score"), chunk.get("found_by")
        head = f"{rank:>2}. {citation_label(chunk.get('citation'), chunk.get('file_path'))}"
        head += f"  score {score:.3f}" if isinstance(score, (int, float)) else ""
        head += f"  found by: {found_by.replace('+', ', ')}" if found_by else ""  # e.g. "dense+ppr"
        lines.append(head)
        excerpt = matching_excerpt(str(chunk.get("content", "")), question)
        lines.extend(textwrap.wrap(excerpt, width=110, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)


def passage_legend(chunks: list[dict], mode: str) -> str:
    """One line: the order, what the score means in ``mode``, and what each ``found by`` tag shown means."""
    if not any(isinstance(chunk.get("score"), (int, float)) for chunk in chunks):
        return f"[{mode}] best first, {STOCK_ORDER}"
    tags = dict.fromkeys(tag for chunk in chunks for tag in str(chunk.get("found_by") or "").split("+") if tag)
    found = ", ".join(f"{tag} = {FOUND_BY_MEANINGS.get(tag, tag)}" for tag in tags)
    return f"[{mode}] best first; score: {SCORE_MEANINGS.get(mode, 'higher is better')}" + (
        f"; found by: {found}" if found else "")


def matching_excerpt(text: str, question: str, width: int = EXCERPT_CHARS) -> str:
    """About ``width`` characters of ``text`` starting at the sentence that shares the most words with the question
    (the passage's start on a tie), with ``...`` where text was left out."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    words = set(re.findall(r"\w{3,}", question.lower()))
    starts = [0] + [m.end() for m in re.finditer(r"[.!?]\s+", text)]
    overlap = [len(words & set(re.findall(r"\w{3,}", text[a:b].lower())))
               for a, b in zip(starts, starts[1:] + [len(text)])]
    start = starts[overlap.index(max(overlap))]
    if len(text) - start < width:  # near the end: fill the window with the words before the sentence
        start = text.find(" ", len(text) - width) + 1
    piece = text[start:start + width]
    cut = start + width < len(text)
    if cut:
        piece = piece.rsplit(" ", 1)[0]
    return ("... " if start else "") + piece + (" ..." if cut else "")


class QueryHelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, and the epilog's lines kept as written."""


def score_help() -> str:
    return "\n".join(["the score beside each passage, per mode:",
                      *(f"  {mode:<11}{meaning}" for mode, meaning in SCORE_MEANINGS.items()),
                      f"  {'stock':<11}{STOCK_ORDER}",
                      "found by: " + ", ".join(f"{tag} = {meaning}" for tag, meaning in FOUND_BY_MEANINGS.items())])


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .eval import bench, demo
    from .retrievers import valid_modes

    formatter = argparse.ArgumentDefaultsHelpFormatter
    parser = argparse.ArgumentParser(prog="lightrag-prism", description=__doc__.split("\n")[0],
                                     formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"lightrag-prism {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="LightRAG's INFO logs; tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("index", help="index files or folders: text, Markdown, HTML, PDF, Word (.docx)", formatter_class=formatter)
    p.add_argument("paths", nargs="+", help=f"files or folders (recursively); types: {' '.join(SUPPORTED_SUFFIXES)}")
    p.add_argument("--working-dir", default="./prism_storage", help="where the index is stored")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="as above")
    p = sub.add_parser("query", help="query an index", formatter_class=QueryHelpFormatter, epilog=score_help())
    p.add_argument("question")
    p.add_argument("knobs", nargs="*", metavar="knob=value",
                   help="QueryParam overrides, e.g. ppr_damping=0.6 prism_dense_head=1")
    p.add_argument("--mode", default=DEFAULT_MODE, choices=valid_modes(),
                   help="retrieval mode: the plugin's prism, hipporag, fidelis, ensemble, tournament, or LightRAG's "
                        "own (mix is LightRAG's default)")
    p.add_argument("--working-dir", default="./prism_storage", help="the index to query")
    # "%(default).0s" prints nothing and stops the formatter from appending "(default: None)"
    p.add_argument("--top-k", type=int, default=None,
                   help="entities/relations retrieved (default: LightRAG's)%(default).0s")
    p.add_argument("--chunk-top-k", type=int, default=None, help="chunks kept (default: LightRAG's)%(default).0s")
    p.add_argument("--context-only", action="store_true", help="retrieval only: the ranked passages, no answer")
    p.add_argument("--json", action="store_true", help="print LightRAG's raw result (entities, relations, chunks, "
                   "metadata) as JSON")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="as above")
    bench.build_parser(sub.add_parser("bench", help="benchmark every mode on a bundled dataset (writes "
                                      "benchmarks/results/bench/ and indexes under prism_storage/bench/)",
                                      formatter_class=formatter))
    demo.build_parser(sub.add_parser("demo", help="offline demo: index the bundled sample, query every mode "
                                     "(writes benchmarks/results/demo/, index in prism_storage/demo/)",
                                     formatter_class=formatter))
    p = sub.add_parser("serve", add_help=False,
                       help="LightRAG Server (API, WebUI, Ollama-compatible chat) with every mode, and the explorer "
                            "page at /prism; takes LightRAG Server's options (serve --help)")
    p.add_argument("server_args", nargs="*", help="LightRAG Server options, e.g. --working-dir DIR --host 127.0.0.1 "
                   "--port 9621")
    return parser


def configure_logging(verbose: bool) -> None:
    """Quiet unless -v: LightRAG logs INFO for every step, which buries the result."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING)
    for name in ("lightrag", "nano-vectordb", "lightrag_prism", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    if not verbose:  # a failure is reported once, as one line; LightRAG's own ERROR lines (its retries) repeat it
        logging.getLogger("lightrag").setLevel(logging.CRITICAL)
        # one warning per failed window or pair; the result's fallbacks (--json) record each one
        logging.getLogger("lightrag_prism.rerankers").setLevel(logging.ERROR)


def describe_failure(exc: BaseException) -> str:
    """One line: what failed and what to do. LLM/endpoint faults name the endpoint."""
    from .backends.openai_compat import DEFAULT_BASE_URL
    from .llm_faults import root_cause

    name = type(exc).__name__
    cause = root_cause(exc)
    if is_llm_failure(exc):
        endpoint = os.environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL)
        model = os.environ.get("PRISM_LLM_MODEL", "")
        return (f"the LLM endpoint {endpoint} (model {model!r}) failed: {type(cause).__name__}: {cause}. "
                f"Check OPENAI_BASE_URL, OPENAI_API_KEY and PRISM_LLM_MODEL, or unset PRISM_LLM_MODEL to run offline")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{name}: {text}" if text else name


def is_llm_failure(exc: BaseException) -> bool:
    """An LLM that is missing or failed (the endpoint's client raised), not a retrieval or input error."""
    from .llm_faults import root_cause

    module = type(root_cause(exc)).__module__
    return type(exc).__name__ in KNOWN_ERRORS or module.startswith(("openai", "httpx", "httpcore", "aiohttp"))


def parse_args(argv: list[str] | None):
    """``knob=value`` words may follow options (argparse alone only takes them right after the question)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((i for i, word in enumerate(argv) if not word.startswith("-")), None)
    if command is not None and argv[command] == "serve":  # the rest are LightRAG Server's options, untouched
        args = parser.parse_args(argv[:command + 1])
        args.server_args = argv[command + 1:]
        return args
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.command != "query" or any(word.startswith("-") or "=" not in word for word in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.knobs = [*args.knobs, *extra]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.verbose)
    try:
        if args.command == "index":
            return asyncio.run(cmd_index(args))
        elif args.command == "query":
            asyncio.run(cmd_query(args))
        elif args.command == "serve":
            from .server import serve

            return serve(args.server_args)
        elif args.command == "bench":
            from .eval.bench import run_from_args

            run_from_args(args)
        else:
            from .eval.demo import run_from_args

            run_from_args(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - every failure is one line (the traceback with -v)
        if args.verbose:
            raise
        known = isinstance(exc, (CLIError, InputError, ValueError, ImportError)) or type(exc).__name__ in KNOWN_ERRORS
        line = str(exc) if known else describe_failure(exc)
        if args.command == "query" and is_llm_failure(exc):
            line = line.rstrip(".") + CONTEXT_ONLY_HINT
        print(f"error: {line}", file=sys.stderr)
        if not known:
            print("(run with -v for the traceback)", file=sys.stderr)
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
