"""A cold ``lightrag-prism query``: one new process per query, as a CLI user runs it, on a small index.

    python benchmarks/bench_cold_query.py                 # 5 files, modes prism, hipporag, naive, mix; 3 runs each
    python benchmarks/bench_cold_query.py --runs 5 --modes prism,naive

Each run is the whole command (interpreter start, imports, opening the index, embedding the question, retrieval,
printing), timed from outside. The baseline, in the same run, is the same command with the question embedded by
the torch worker that embeds documents (``query_runtime="worker"``: it imports torch and sentence-transformers
first); the default embeds it in-process with the numpy MiniLM (``backends/query_encoder.py``). Target (issue 24):
at most 3 s. Writes ``benchmarks/results/bench_cold_query.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import write_json  # noqa: E402

QUESTION = "Who designed the lighthouse on Kestrel Bay?"
FILES = [f"Document {i}: The Vexholm Lighthouse number {i} was designed by Anders Brekke in 187{i}. It stands on "
         f"Kestrel Bay near the port of Norhaven." for i in range(1, 6)]
# The CLI with the question embedded by the worker: the baseline.
WORKER_CLI = ("import sys, lightrag_prism.backends as b; from lightrag_prism.cli import main; "
              "b.default_embedding_func = lambda: b.local_embedding_func(query_runtime='worker'); "
              "sys.exit(main(sys.argv[1:]))")


def run(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="prism,hipporag,naive,mix")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    with tempfile.TemporaryDirectory() as tmp:
        docs, index = Path(tmp, "docs"), str(Path(tmp, "index"))
        docs.mkdir()
        for i, text in enumerate(FILES, start=1):
            (docs / f"d{i}.txt").write_text(text)
        cli = [sys.executable, "-m", "lightrag_prism"]
        print(f"indexing {len(FILES)} files: {run([*cli, 'index', str(docs), '--working-dir', index]):.1f} s")
        rows = {}
        for mode in modes:
            query = ["query", QUESTION, "--working-dir", index, "--mode", mode]
            ours, baseline = [], []
            for _ in range(args.runs):  # interleaved, so load on the box hits both alike
                ours.append(run([*cli, *query]))
                baseline.append(run([sys.executable, "-c", WORKER_CLI, *query]))
            rows[mode] = {"numpy_s": statistics.median(ours), "worker_s": statistics.median(baseline)}
            rows[mode]["ratio"] = rows[mode]["numpy_s"] / rows[mode]["worker_s"]
    print(f"\ncold `lightrag-prism query`, median of {args.runs} runs (a new process each)")
    print("| mode | query embedded in-process (s) | by the torch worker (s) | ratio |")
    print("|---|---|---|---|")
    for mode, row in rows.items():
        print(f"| {mode} | {row['numpy_s']:.2f} | {row['worker_s']:.2f} | {row['ratio']:.2f} |")
    write_json("bench_cold_query", {"runs": args.runs, "files": len(FILES), "modes": rows})


if __name__ == "__main__":
    main()
