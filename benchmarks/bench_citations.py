"""Citations on a 300-page PDF: what reading pages and outline, and citing every chunk, cost, and whether the
cited pages hold each chunk's text.

Baseline, measured in the same run: the PDF as the reader before citations made it (pypdf's text of every page
joined by blank lines, no page markers, no outline headings), indexed the same way. Both are indexed by a
PrismRAG with the offline spaCy extractor and an in-process hashed embedder (the work citations add is in
reading and chunking; the embedder's cost is the same on both sides and would only hide it).

    python benchmarks/bench_citations.py [--pages 300]

Writes ``benchmarks/results/citations.json``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import timed, write_json  # noqa: E402
from lightrag_prism import PrismRAG  # noqa: E402
from lightrag_prism.inputs import pdf_text  # noqa: E402
from tests.citations.corpus import make_manual  # noqa: E402
from tests.helpers import dense_hash_embedding_func  # noqa: E402


def read_before(path: Path) -> str:
    """The reader before citations: every page's text, blank lines between."""
    import pypdf

    return "\n\n".join((page.extract_text() or "").strip() for page in pypdf.PdfReader(str(path)).pages).strip()


async def index(text: str, folder: Path) -> tuple[float, list[dict]]:
    rag = PrismRAG(working_dir=str(folder), workspace=folder.name, embedding_func=dense_hash_embedding_func(64))
    await rag.initialize_storages()
    try:
        start = time.perf_counter()
        await rag.ainsert(text, file_paths="manual.pdf")
        seconds = time.perf_counter() - start
        from lightrag.base import DocStatus

        from lightrag_prism.citations.store import citation_of

        (status,) = (await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])).values()
        records = await rag.text_chunks.get_by_ids(status.chunks_list)
        return seconds, [dict(r, citation=citation_of(r, r["file_path"])) for r in records]
    finally:
        await rag.finalize_storages()


def pages_hold_text(path: Path, chunks: list[dict]) -> float:
    """Share of chunks whose cited pages (read again with pypdf) contain the chunk's words in order."""
    import pypdf

    pages = [" ".join((p.extract_text() or "").split()) for p in pypdf.PdfReader(str(path)).pages]
    held = 0
    for chunk in chunks:
        first, last = chunk["citation"]["pages"]
        words = " ".join(re.sub(r"(?m)^#{1,6} ", "", chunk["content"]).split())
        held += words in " ".join(pages[first - 1:last])
    return held / len(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pdf = make_manual(root / "manual.pdf", pages=args.pages)
        read_before_s, before_text = timed(lambda: read_before(pdf))
        read_after_s, after_text = timed(lambda: pdf_text(pdf))
        asyncio.run(index(before_text[:2000], root / "warmup"))  # spaCy and the tokenizer loaded before timing
        index_before, index_after = [], []
        for round_ in range(2):  # alternated, each side's best
            index_before.append(asyncio.run(index(before_text, root / f"before{round_}"))[0])
            seconds, chunks = asyncio.run(index(after_text, root / f"after{round_}"))
            index_after.append(seconds)
        index_before_s, index_after_s = min(index_before), min(index_after)
        share = pages_hold_text(pdf, chunks) if chunks else 0.0
    report = {
        "pages": args.pages, "chunks": len(chunks),
        "read_seconds": {"before": round(read_before_s, 3), "with_citations": round(read_after_s, 3),
                         "ratio": round(read_after_s / read_before_s, 3)},
        "index_seconds": {"before": round(index_before_s, 2), "with_citations": round(index_after_s, 2),
                          "ratio": round(index_after_s / index_before_s, 3)},
        "chunks_whose_cited_pages_hold_their_text": round(share, 4),
        "chunks_with_a_section": sum(bool(c["citation"]["section"]) for c in chunks),
    }
    print(report)
    write_json("citations", report)


if __name__ == "__main__":
    main()
