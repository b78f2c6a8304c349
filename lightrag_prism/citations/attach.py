"""Citations on a query's result: every chunk's ``citation``, pages and sections on every reference, the answer's
``[n]`` markers checked. Reads the chunk records with one ``text_chunks.get_by_ids``."""

from __future__ import annotations

from typing import Any

from .answer import CitationFilter
from .store import citation_of


async def attach_citations(text_chunks, raw: dict[str, Any]) -> None:
    """``chunk["citation"]`` on every chunk of ``raw["data"]`` (any mode), and ``pages``/``sections`` on each
    reference: the pages and sections its cited chunks cover (LightRAG's ``reference_id``/``file_path`` kept)."""
    data = raw.get("data") or {}
    chunks = data.get("chunks") or []
    if not chunks:
        return
    ids = [str(chunk.get("chunk_id") or "") for chunk in chunks]
    wanted = [i for i in dict.fromkeys(ids) if i]
    records = dict(zip(wanted, await text_chunks.get_by_ids(wanted))) if wanted else {}
    for chunk, chunk_id in zip(chunks, ids):
        chunk["citation"] = citation_of(records.get(chunk_id), chunk.get("file_path"))
    for reference in data.get("references") or []:
        cited = [c["citation"] for c in chunks if _cites(c, reference)]
        pages = {page for c in cited if c["pages"] for page in range(c["pages"][0], c["pages"][1] + 1)}
        reference["pages"] = sorted(pages) or None
        reference["sections"] = list(dict.fromkeys(c["section"] for c in cited if c["section"])) or None


def _cites(chunk: dict[str, Any], reference: dict[str, Any]) -> bool:
    if chunk.get("reference_id") not in (None, ""):
        return str(chunk["reference_id"]) == str(reference.get("reference_id"))
    return chunk.get("file_path") == reference.get("file_path")


def reference_ids(raw: dict[str, Any]) -> set[str]:
    return {str(r.get("reference_id")) for r in (raw.get("data") or {}).get("references") or []}


def dropped_note(dropped: list[str]) -> dict[str, str]:
    """The fallback entry for markers the LLM made up."""
    return {"step": "citations", "reason": f"the answer cited {', '.join(dict.fromkeys(dropped))}, not among the "
                                           "returned references: taken out"}


def checked_answer(raw: dict[str, Any], fallbacks: list[dict]) -> None:
    """Check the ``[n]`` markers of ``raw["llm_response"]`` against the returned references: an answer in place, a
    stream as it is read. Dropped markers are recorded in ``fallbacks`` (for a stream, once it has been read)."""
    response = raw.get("llm_response") or {}
    markers = CitationFilter(reference_ids(raw))
    if response.get("is_streaming") and response.get("response_iterator") is not None:
        response["response_iterator"] = _checked_stream(response["response_iterator"], markers, fallbacks)
    elif isinstance(response.get("content"), str):
        response["content"] = markers.feed(response["content"]) + markers.flush()
        if markers.dropped:
            fallbacks.append(dropped_note(markers.dropped))


async def _checked_stream(stream, markers: CitationFilter, fallbacks: list[dict]):
    async for piece in stream:
        if shown := markers.feed(piece):
            yield shown
    if rest := markers.flush():
        yield rest
    if markers.dropped:
        fallbacks.append(dropped_note(markers.dropped))
