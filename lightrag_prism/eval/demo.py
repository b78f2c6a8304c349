"""The offline demo (the README's main job): index the bundled MuSiQue sample and query it with every mode.

    lightrag-prism demo               # first 5 questions (~100 passages), all modes, no LLM, no network
    lightrag-prism demo --questions 20

It prints, per question, the top passages each mode retrieved (a check mark on gold supporting passages), then the
recall table. The index lives in ``--working-dir`` and a second run reuses it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections import Counter

from .bench import default_modes, markdown_table, positive_int, run_bench

DEFAULT_QUESTIONS = 5
SHOW_TOP = 3


def passage_labels(dataset) -> dict[str, str]:
    """Passage id -> its title; a title several passages share (paragraphs of one article) gets the start of the id
    too ("Publix #0ce1ef"), or two different passages would look like one shown twice."""
    counts = Counter(p.title for p in dataset.passages)
    return {p.id: p.title if counts[p.title] == 1 else f"{p.title} #{p.id.rsplit('-', 1)[-1][:6]}"
            for p in dataset.passages}


def print_evidence(dataset, rankings: dict[str, list[list[str]]], show_top: int = SHOW_TOP) -> None:
    titles = passage_labels(dataset)
    print(f"\nPer question: the dataset's expected answer (no LLM answers offline) and the gold passages the answer "
          f"needs; per mode, the titles of its top {show_top} passages, \u2713 = a gold passage.")
    for i, question in enumerate(dataset.questions):
        gold = set(question.gold_passage_ids)
        print(f"\nQ{i + 1}: {question.text}\n    expected answer: {question.answer}; gold passages: "
              + "; ".join(titles.get(g, g) for g in question.gold_passage_ids))
        for mode, ranked in rankings.items():
            top = ranked[i][:show_top]
            shown = ", ".join(("✓ " if pid in gold else "  ") + titles.get(pid, pid)[:48] for pid in top)
            print(f"    {mode:>10}: {shown}")


def run_from_args(args) -> dict:
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    modes = [m.strip() for m in args.modes.split(",")] if args.modes else default_modes()
    start = time.perf_counter()
    report, dataset, rankings = asyncio.run(run_bench(
        "musique", args.questions, modes, args.working_dir, args.out, progress=not args.quiet))
    print_evidence(dataset, rankings)
    print("\n" + markdown_table(report))
    print(f"Offline: no LLM was called; modes used their documented fallbacks. "
          f"Done in {time.perf_counter() - start:.0f} s. Results in {args.out}/ (json, md, png).")
    return report


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=positive_int, default=DEFAULT_QUESTIONS,
                        help="first N questions of the sample (default: %(default)s)")
    parser.add_argument("--modes", default=None, help="comma-separated (default: every mode and BM25)")
    parser.add_argument("--working-dir", default="prism_storage/demo")
    parser.add_argument("--out", default="benchmarks/results/demo")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def main(argv: list[str] | None = None) -> None:
    run_from_args(build_parser().parse_args(argv))


if __name__ == "__main__":
    main()
