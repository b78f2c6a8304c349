"""The graph modes on users' own documents: the PostgreSQL manual (pgdocs) and a small company's notes (notes).

Each set is indexed as ``lightrag-prism bench --dataset NAME`` indexes it (the offline extractor reads the text, no
LLM, all-MiniLM-L6-v2) and every mode is scored against the three baselines a user would pick instead of a graph:
BM25, dense, and their reciprocal-rank fusion. Besides the modes as they run by default, ``prism`` and ``hipporag``
run with ``thin_graph_relations=0`` (the walk ranks whatever the graph), which is what they did before the
thin-graph fallback. The manual is Debian's ``postgresql-doc-15`` (``apt-get install postgresql-doc-15``).

    python benchmarks/bench_docs.py --working-dir /tmp/bench-docs

Writes ``benchmarks/results/docs/{pgdocs,notes}/results.{json,md,png}``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from lightrag_prism.eval.bench import BASELINES, markdown_table, run_bench

RESULTS = Path(__file__).parent / "results" / "docs"
DATASETS = ("pgdocs", "notes")
MODES = ["naive", "prism", "hipporag", "prism:thin_graph_relations=0", "hipporag:thin_graph_relations=0",
         *BASELINES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--working-dir", default="prism_storage/bench-docs", help="indexes (built once, reused)")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    for name in args.datasets.split(","):
        report, _, _ = asyncio.run(run_bench(name, None, args.modes.split(","), args.working_dir, RESULTS / name,
                                             text_only=True))
        print(markdown_table(report))
    print(f"Wrote {RESULTS}/<dataset>/results.json, results.md and results.png")


if __name__ == "__main__":
    main()
