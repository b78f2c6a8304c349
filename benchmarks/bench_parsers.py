"""Worst-case time of every LLM-answer parser on hostile answers up to the parse cap.

    python benchmarks/bench_parsers.py

Inputs: deep nesting (``[``, ``{``, ``{"a":``), unbalanced quotes and backslashes, a long ranking, CJK text, each just
under ``MAX_ANSWER_CHARS`` (longer answers are refused at once), plus the same as megabyte strings. Baseline, in the
same run: ``json.loads`` of a valid JSON list of the same length. Prints the slowest input per parser in ms and its
ratio to the baseline. Issue 13's target: every parser under 50 ms.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.foundation.test_parsers_total import PARSERS  # noqa: E402

from lightrag_prism.llm import MAX_ANSWER_CHARS  # noqa: E402

UNITS = ["[", "{", '{"a":', '"', "\\", "{\"", "1,", "é東京", "x", '{"ranking": [', "```json\n[",
         "[[ ## fact_after_filter ## ]]\n["]


def hostile_inputs() -> list[str]:
    under = [(u * (MAX_ANSWER_CHARS // len(u) + 1))[:MAX_ANSWER_CHARS - 1] for u in UNITS]
    return under + [u * (1_000_000 // len(u)) for u in UNITS[:3]]


def worst_ms(parse, inputs: list[str]) -> float:
    worst = 0.0
    for text in inputs:
        start = time.perf_counter()
        parse(text)
        worst = max(worst, time.perf_counter() - start)
    return 1000 * worst


def main() -> None:
    inputs = hostile_inputs()
    valid = json.dumps(list(range(MAX_ANSWER_CHARS // 8)))[:MAX_ANSWER_CHARS]
    valid = valid[:valid.rfind(",")] + "]"
    baseline = worst_ms(json.loads, [valid] * 3)
    print(f"baseline json.loads of a valid {len(valid):,}-char list: {baseline:.1f} ms\n")
    print("| parser | worst ms | vs baseline | under 50 ms |\n|---|---|---|---|")
    for name, (parse, _) in PARSERS.items():
        ms = worst_ms(parse, inputs)
        print(f"| {name} | {ms:.1f} | {ms / baseline:.1f}x | {'yes' if ms < 50 else 'NO'} |")


if __name__ == "__main__":
    main()
