"""A chunk's citation as it is stored, and read back. Pure: dicts in, dicts out.

The citation rides in the chunk's ``heading`` record, LightRAG's own field for a chunk's section (``{"level",
"heading", "parent_headings"}``), which every LightRAG storage keeps whole (PostgreSQL in a JSONB column, Redis and
the JSON files as part of the chunk) and which is deleted and rewritten with its chunk. LightRAG reads only its
three keys; the citation adds two: ``pages`` (``[first, last]`` or None) and ``span`` (``[start, end)`` in the
document as stored). Because it is LightRAG's heading, an LLM extracting a chunk also sees its section path
(LightRAG's ``---Section Context---`` block) and ``enable_content_headings`` shows it at query time.
"""

from __future__ import annotations

from typing import Any

from .layout import SECTION_SEPARATOR, Layout


def cite_chunks(chunks: list[dict[str, Any]], layout: Layout) -> list[dict[str, Any]]:
    """Give each chunk a chunker returned its ``heading`` record with pages and span (in place). A span comes from
    the chunker (LightRAG's ``_source_span``, the table chunker's ``source_span``) or is found in the text; a
    chunk whose text is not a slice of the document (a chunker that rewrites text) is left uncited."""
    spans = [_chunker_span(chunk) for chunk in chunks]
    missing = [i for i, span in enumerate(spans) if span is None]
    for i, span in zip(missing, layout.locate([str(chunks[i].get("content", "")) for i in missing])):
        spans[i] = span
    for chunk, span in zip(chunks, spans):
        if span is None:
            continue
        citation = layout.citation(*span)
        heading = _heading_record(chunk) or _section_record(citation.section)
        heading["pages"] = list(citation.pages) if citation.pages else None
        heading["span"] = list(citation.span)
        chunk["heading"] = heading
    return chunks


def _chunker_span(chunk: dict[str, Any]) -> tuple[int, int] | None:
    lightrag_span = chunk.pop("_source_span", None)  # LightRAG drops it before storing; we read it first
    if isinstance(lightrag_span, dict):
        return lightrag_span["start"], lightrag_span["end"]
    table_span = chunk.get("source_span")
    if isinstance(table_span, (list, tuple)) and len(table_span) == 2:
        return int(table_span[0]), int(table_span[1])
    return None


def _section_record(section: tuple[str, ...]) -> dict[str, Any]:
    return {"level": len(section), "heading": section[-1] if section else "", "parent_headings": list(section[:-1])}


def _heading_record(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The heading a user's chunker set (nested or LightRAG's legacy flat fields), as a new dict; None if none."""
    heading = chunk.get("heading")
    if isinstance(heading, dict):
        return dict(heading)
    if isinstance(heading, str) and heading.strip():
        return {"level": chunk.get("level", 0), "heading": heading.strip(),
                "parent_headings": list(chunk.get("parent_headings") or [])}
    return None


def citation_of(record: dict[str, Any] | None, file_path: str | None) -> dict[str, Any]:
    """``{"file", "pages", "section", "span"}`` of a stored chunk record; what it lacks (a chunk indexed before
    citations, a custom chunk) is None."""
    heading = (record or {}).get("heading")
    heading = heading if isinstance(heading, dict) else {}
    path = [str(p) for p in heading.get("parent_headings") or [] if str(p).strip()]
    if str(heading.get("heading") or "").strip():
        path.append(str(heading["heading"]).strip())
    return {"file": file_path or (record or {}).get("file_path"), "pages": _pair(heading.get("pages")),
            "section": SECTION_SEPARATOR.join(path) or None, "span": _pair(heading.get("span"))}


def _pair(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return [int(value[0]), int(value[1])]
    return None


def citation_label(citation: dict[str, Any] | None, file_path: str | None = None) -> str:
    """``file p. 2–3 § A > B`` (pages and section where known), how the command line shows a passage's source."""
    citation = citation or {}
    label = citation.get("file") or file_path or "unknown source"
    pages = citation.get("pages")
    if pages:
        label += f" p. {pages[0]}" + (f"–{pages[1]}" if pages[1] != pages[0] else "")
    if citation.get("section"):
        label += f" § {citation['section']}"
    return label
