"""What `lightrag-prism query` prints in every mode when the LLM endpoint refuses connections.

    python benchmarks/bench_cli_dead_llm.py

The small index of ``bench_cold_query.py``, then one CLI process per mode with ``PRISM_LLM_MODEL=m`` and
``OPENAI_BASE_URL=http://127.0.0.1:9/v1`` (nothing listens on port 9): exit code, lines on stderr and stdout, and
seconds. Target (issue 24): exit 2, one stderr line, within 5 s, in every mode. Writes
``benchmarks/results/bench_cli_dead_llm.json``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402
from bench_cold_query import FILES, QUESTION  # noqa: E402

from lightrag_prism.retrievers import valid_modes  # noqa: E402

DEAD = {"PRISM_LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x"}


def main() -> None:
    cli = [sys.executable, "-m", "lightrag_prism"]
    offline = {k: v for k, v in os.environ.items() if k not in DEAD} | {"HF_HUB_OFFLINE": "1"}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        docs, index = Path(tmp, "docs"), str(Path(tmp, "index"))
        docs.mkdir()
        for i, text in enumerate(FILES, start=1):
            (docs / f"d{i}.txt").write_text(text)
        subprocess.run([*cli, "index", str(docs), "--working-dir", index], env=offline, check=True,
                       capture_output=True)
        for mode in valid_modes():
            start = time.perf_counter()
            done = subprocess.run([*cli, "query", QUESTION, "--working-dir", index, "--mode", mode],
                                  env={**offline, **DEAD}, capture_output=True, text=True)
            rows[mode] = {"exit": done.returncode, "stderr_lines": len(done.stderr.splitlines()),
                          "stdout_lines": len(done.stdout.splitlines()),
                          "seconds": round(time.perf_counter() - start, 2),
                          "stderr": done.stderr.strip()[:200]}
    print("| mode | exit | stderr lines | stdout lines | seconds |")
    print("|---|---|---|---|---|")
    for mode, row in rows.items():
        print(f"| {mode} | {row['exit']} | {row['stderr_lines']} | {row['stdout_lines']} | {row['seconds']} |")
    print(f"\ne.g. {rows['mix']['stderr']}")
    write_json("bench_cli_dead_llm", {"modes": rows})


if __name__ == "__main__":
    main()
