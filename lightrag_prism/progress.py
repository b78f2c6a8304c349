"""Progress of one ``ainsert``: a tqdm bar that counts documents as LightRAG finishes them, and the outcome.

LightRAG processes a list ``ainsert`` as one pipeline run with many documents in flight, so a bar advanced per
``ainsert`` call stays at 0 until the end. :func:`insert_progress` polls the document-status counts instead: the
bar counts finished documents and says how many are being parsed or extracted, so it moves from the first document
(with many in flight, the first ones finish only after a round of storage flushes).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from .background import stop_task

POLL_SECONDS = 0.5
FINISHED = ("processed", "failed")
IN_FLIGHT = ("parsing", "analyzing", "processing")


async def _counts(rag) -> tuple[int, int]:
    """(finished, in flight) documents of the instance."""
    counts = await rag.doc_status.get_status_counts()
    return (sum(counts.get(status, 0) for status in FINISHED), sum(counts.get(status, 0) for status in IN_FLIGHT))


@asynccontextmanager
async def insert_progress(rag, total: int, desc: str, unit: str = "doc", disable: bool = False):
    """Run an insert inside this block; the bar shows how many of its ``total`` documents are finished."""
    bar = tqdm(total=total, desc=desc, unit=unit, disable=disable or total == 0)  # nothing to do: no "0passage"
    base, _ = await _counts(rag)

    async def follow() -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            finished, in_flight = await _counts(rag)
            bar.n = min(total, max(0, finished - base))
            bar.set_postfix_str(f"{in_flight} in progress", refresh=False)
            bar.refresh()

    task = asyncio.create_task(follow())
    try:
        yield bar
        bar.n = total
    finally:
        await stop_task(task)  # not left polling: a single cancel() of a Redis read can be lost (background.py)
        bar.set_postfix_str("", refresh=False)  # the last poll's "N in progress" is over
        bar.close()


@dataclass
class InsertOutcome:
    processed: list[str] = field(default_factory=list)
    already_indexed: list[str] = field(default_factory=list)  # LightRAG's duplicate-submission records
    failed: dict[str, str] = field(default_factory=dict)  # file path -> error


async def insert_outcome(rag, track_id: str, contents: dict[str, str] | None = None) -> InsertOutcome:
    """What became of each document of the insert ``track_id``. LightRAG refuses a document whose file name it
    already holds: with ``contents`` (file name -> text) a refusal is "already indexed" only when the document it
    holds under that name has the same text, else a failure that says so."""
    outcome = InsertOutcome()
    for doc in (await rag.aget_docs_by_track_id(track_id)).values():
        path = getattr(doc, "file_path", "") or ""
        metadata = getattr(doc, "metadata", None) or {}
        status = getattr(doc.status, "value", doc.status)
        if metadata.get("is_duplicate"):
            held = await rag.full_docs.get_by_id(metadata.get("original_doc_id", ""))
            if contents is None or (held and held.get("content", "").strip() == contents.get(path, "").strip()):
                outcome.already_indexed.append(path)
            else:
                outcome.failed[path] = ("a different document with this file name is already indexed; rename the "
                                        "file (or delete the indexed one) and index it again")
        elif status == "processed":
            outcome.processed.append(path)
        else:
            outcome.failed[path] = getattr(doc, "error_msg", None) or status
    return outcome
