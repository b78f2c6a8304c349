"""Every script in examples/ runs to the end offline (the scripted local server stands in for the LLM) and prints
what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {  # example -> a line fragment its output must contain
    "citations.py": "pump_manual.pdf pages=[2, 2] section='Pump Manual > Maintenance'",
    "insert_agentic_merging.py": "merged ['Acme Corp', 'Acme Corporation'] -> Acme Corporation",
    "insert_entity_types.py": "new instance sees: True",
    "insert_table_chunking.py": "TABLE chunk",
    "llm_faults.py": "LLMCallError: http://127.0.0.1:9/v1 (model 'any-model') APIConnectionError",
    "insert_timestamps.py": "chunks in context: ['[Time: 2024-Q3]', '[Time: 2024-Q2]']",
    "query_modes.py": "prism: 4 chunks",
}


def test_every_example_is_listed():
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_")) == sorted(EXPECTED)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_runs_offline(example, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRISM_", "OPENAI_"))}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / example)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**env, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert EXPECTED[example] in done.stdout, done.stdout[-3000:]
