"""The offline extractor's precision on a labelled sample of its relations, from the notes and the manual.

The texts: the 40 notes files and 220 passages of the PostgreSQL manual bench (``random.Random(67).sample``). The
extractor that is first on the path reads them; of its typed relations (not the ``mentioned with`` co-occurrence
links) 150 are drawn (``random.Random(150).sample``). A relation is labelled correct when its evidence sentence
states it between the two entities and both are things the text names (a fragment such as "server= connstr
Specifies" or a heading taken for a subject is wrong). Labels: ``benchmarks/labels/extractor-v4.json`` (landed main
before issue 67's work) and ``extractor-v7.json``.

    python benchmarks/extractor_precision.py                    # precision of each labelled file, 95% Wilson interval
    python benchmarks/extractor_precision.py --draw out.json    # this checkout's extractor: the sample to label

Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

LABELS = Path(__file__).parent / "labels"
SAMPLE = 150


def texts() -> list[tuple[str, str]]:
    from lightrag_prism.eval.notes import load_notes
    from lightrag_prism.eval.pgdocs import manual_passages

    manual = random.Random(67).sample(manual_passages(), 220)
    return [(p.id, p.content) for p in load_notes().passages] + [(p.id, p.content) for p in manual]


def draw() -> list[dict]:
    from lightrag_prism.insert.extraction.spacy_extractor import SpacyExtractor

    corpus = texts()
    rows = [{"file": name, "subject": r.source, "predicate": r.predicate, "object": r.target,
             "evidence": r.description}
            for (name, _), result in zip(corpus, SpacyExtractor().extract([text for _, text in corpus]))
            for r in result.relations if r.predicate != "mentioned with"]
    return random.Random(150).sample(rows, min(SAMPLE, len(rows)))


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    centre = (correct + z * z / 2) / (n + z * z)
    half = z * math.sqrt(correct * (n - correct) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draw", help="write this checkout's sample (unlabelled) to this file")
    args = parser.parse_args()
    if args.draw:
        Path(args.draw).write_text(json.dumps(draw(), indent=1, ensure_ascii=False))
        print(f"Wrote {args.draw}: label each row's 'correct', then put it under {LABELS}/")
        return
    for path in sorted(LABELS.glob("extractor-*.json")):
        rows = json.loads(path.read_text())
        correct = sum(bool(r["correct"]) for r in rows)
        low, high = wilson(correct, len(rows))
        print(f"{path.stem}: {correct}/{len(rows)} correct = {100 * correct / len(rows):.1f}% "
              f"[{100 * low:.1f}, {100 * high:.1f}]")


if __name__ == "__main__":
    main()
