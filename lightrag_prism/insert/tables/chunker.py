"""Table-aware chunking usable as LightRAG's ``chunking_func``.

``make_table_aware_chunker(...)`` returns a function with LightRAG 1.5.7's legacy
6-argument chunker signature::

    (tokenizer, content, split_by_character, split_by_character_only,
     chunk_overlap_token_size, chunk_token_size) -> list[dict]

Each dict has the keys LightRAG needs (``tokens``, ``content``, ``chunk_order_index``)
plus ``is_table`` and ``source_span`` (``[start, end)`` character offsets of the
original text the chunk carries, excluding added context, headers and wrappers);
table chunks also have ``table_index``, ``table_part`` (1-based) and ``table_parts``.
LightRAG's ``build_chunks_dict_from_chunking_result`` copies extra keys into the
``text_chunks`` store unchanged (all values are JSON-serialisable).

Text between tables goes through LightRAG's own ``chunking_by_token_size``; each of
its chunks is then snapped back to an exact slice of the source, because decoding a
token window can cut a CJK character in two (U+FFFD).  Any text the windows missed
becomes its own chunk, so the result is lossless: every non-whitespace character of
the input lies inside some chunk's ``source_span`` and its text is in that chunk.

Table rules (tables found by :mod:`lightrag_prism.insert.tables.html`):

* a table within ``table_max_tokens`` stays whole in one chunk;
* a larger one is split between top-level rows; every later part starts with the
  original ``<table …>`` tag and the header rows, and every part ends with ``</table>``;
  a piece that is still too large (one huge row, or a table without rows) is cut by
  tokens as a last resort, without wrappers;
* each table chunk carries up to ``table_context_tokens`` tokens of the surrounding
  text before and after (not crossing into a neighbouring table), under
  ``[Context before table]`` / ``[Context after table]`` markers;
* with ``embed_max_tokens`` every chunk (context included) fits the embedder: table
  bodies are capped at it, context is shortened first, and text chunks are split.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Callable

from lightrag.chunker.token_size import chunking_by_token_size

from .html import TableSpan, find_table_spans
from .prompt import (  # re-exported: the prompt helpers belong to this feature
    CONTEXT_AFTER_MARKER,
    CONTEXT_BEFORE_MARKER,
    TABLE_EXTRACTION_GUIDANCE,
    is_table_chunk,
    table_prompt_addon,
)
from .split import split_table
from .token_budget import TokenizerLike, count_tokens, head_tokens, split_by_tokens, tail_tokens

logger = logging.getLogger(__name__)

__all__ = [
    "CONTEXT_AFTER_MARKER",
    "CONTEXT_BEFORE_MARKER",
    "TABLE_EXTRACTION_GUIDANCE",
    "TableChunkerConfig",
    "chunk_document",
    "is_table_chunk",
    "make_table_aware_chunker",
    "table_prompt_addon",
]

_REPLACEMENT = "\ufffd"
_TINY_GAP_TOKENS = 8  # uncovered runs this small join the previous chunk instead of forming one


@dataclass(frozen=True)
class TableChunkerConfig:
    """Table options; ``table_max_tokens=None`` means "the pipeline's ``chunk_token_size``"."""

    table_max_tokens: int | None = None
    table_context_tokens: int = 100
    embed_max_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("table_max_tokens", "embed_max_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        if not isinstance(self.table_context_tokens, int) or self.table_context_tokens < 0:
            raise ValueError(
                f"table_context_tokens must be a non-negative int, got {self.table_context_tokens!r}"
            )


@dataclass(frozen=True)
class _TextOptions:
    split_by_character: str | None
    split_by_character_only: bool
    overlap: int
    size: int


# --------------------------------------------------------------------------- text segments


def _core_of(chunk_text: str) -> tuple[str, bool, bool]:
    """Strip whitespace and U+FFFD from both ends; report which ends had broken characters."""
    stripped = chunk_text.strip()
    left = stripped.lstrip(_REPLACEMENT)
    core = left.rstrip(_REPLACEMENT)
    return core.strip(), len(left) != len(stripped), len(core) != len(left)


def _widen(segment: str, start: int, end: int, left: bool, right: bool) -> tuple[int, int]:
    """Re-include the character a token window cut in half (skipping whitespace to reach it)."""
    if left:
        while start > 0 and segment[start - 1].isspace():
            start -= 1
        start = max(0, start - 1)
    if right:
        while end < len(segment) and segment[end].isspace():
            end += 1
        end = min(len(segment), end + 1)
    return start, end


def _nearest(segment: str, core: str, target: int, slack: int) -> int:
    """Occurrence of ``core`` closest to ``target`` within ``slack`` characters, else -1."""
    best, pos = -1, segment.find(core, max(0, target - slack))
    while 0 <= pos <= target + slack:
        if best < 0 or abs(pos - target) < abs(best - target):
            best = pos
        pos = segment.find(core, pos + 1)
    return best


def _pieces(segment: str, sep: str | None) -> list[tuple[int, int]]:
    """Offsets of ``segment.split(sep)`` (the whole segment without a separator)."""
    if not sep:
        return [(0, len(segment))]
    out, pos = [], 0
    for part in segment.split(sep):
        out.append((pos, pos + len(part)))
        pos += len(part) + len(sep)
    return out


def _window_spans(
    tokenizer: TokenizerLike, piece: str, raw: list[dict[str, Any]], stride: int
) -> list[tuple[int, int]]:
    """Locate LightRAG's token windows of ``piece``; unlocatable windows are dropped.

    Window ``k`` starts ``k * stride`` tokens in; its expected character offset is
    re-anchored on each located window, and the nearest match to it wins, so
    repetitive text does not snap a window onto another copy.
    """
    ids = tokenizer.encode(piece) if len(raw) > 1 else []
    spans: list[tuple[int, int]] = []
    expected = 0
    for k, item in enumerate(raw):
        core, left, right = _core_of(str(item.get("content", "")))
        pos = _nearest(piece, core, expected, 64) if core else -1
        if pos >= 0:
            spans.append(_widen(piece, pos, pos + len(core), left, right))
            expected = pos
        elif core:
            logger.debug("chunk not found verbatim in source; its text is recovered as a gap")
        expected += len(tokenizer.decode(ids[k * stride : (k + 1) * stride]))
    return spans


def _fill_gaps(
    tokenizer: TokenizerLike, segment: str, spans: list[tuple[int, int]], size: int
) -> list[tuple[int, int]]:
    """Add spans for every non-whitespace run no chunk covers, keeping document order."""
    out: list[tuple[int, int]] = []
    cursor = 0
    for start, end in sorted(spans) + [(len(segment), len(segment))]:
        if start > cursor and segment[cursor:start].strip():
            if out and count_tokens(tokenizer, segment[cursor:start]) <= _TINY_GAP_TOKENS:
                out[-1] = (out[-1][0], start)
            else:
                out.extend(split_by_tokens(tokenizer, segment, size, cursor, start))
        if end > start:
            out.append((start, end))
        cursor = max(cursor, end)
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _text_spans(tokenizer: TokenizerLike, text: str, lo: int, hi: int, opts: _TextOptions) -> list[tuple[int, int]]:
    """Chunk ``text[lo:hi]`` with LightRAG's token chunker; return exact document spans."""
    segment = text[lo:hi]
    if not segment.strip():
        return []
    spans: list[tuple[int, int]] = []
    stride = max(1, opts.size - opts.overlap)
    for p_lo, p_hi in _pieces(segment, opts.split_by_character):
        # One call per separator piece: identical to LightRAG splitting the whole
        # segment (pieces are chunked independently) but every chunk's piece is known.
        raw = chunking_by_token_size(
            tokenizer,
            segment[p_lo:p_hi],
            opts.split_by_character,
            opts.split_by_character_only,
            opts.overlap,
            opts.size,
        )
        spans += [(p_lo + s, p_lo + e) for s, e in _window_spans(tokenizer, segment[p_lo:p_hi], raw, stride)]
    spans = _fill_gaps(tokenizer, segment, spans, opts.size)
    trimmed = (_trim(segment, s, e) for s, e in spans)
    return [(lo + s, lo + e) for s, e in trimmed if e > s]


def _drop_contained(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort spans by start; drop any span inside another (its text is already in that chunk)."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(set(spans), key=lambda se: (se[0], -se[1])):
        if kept and end <= kept[-1][1]:
            continue
        kept.append((start, end))
    return kept


def _text_chunks(
    tokenizer: TokenizerLike, text: str, lo: int, hi: int, opts: _TextOptions, embed_max: int | None
) -> list[dict[str, Any]]:
    """Chunks for the text ``text[lo:hi]``, each within ``embed_max`` tokens when given."""
    if embed_max is not None and embed_max < opts.size:
        # The embedder limit is a hard ceiling: ask LightRAG for windows that fit it,
        # rather than cutting its larger (overlapping) windows afterwards.
        opts = replace(opts, size=embed_max, overlap=min(opts.overlap, embed_max // 2))
    spans: list[tuple[int, int]] = []
    for start, end in _text_spans(tokenizer, text, lo, hi, opts):
        if embed_max is not None and count_tokens(tokenizer, text[start:end]) > embed_max:
            spans += split_by_tokens(tokenizer, text, embed_max, start, end)  # rare: a widened window
        else:
            spans.append((start, end))
    trimmed = (_trim(text, s, e) for s, e in spans)
    return [
        _chunk_dict(tokenizer, text[s:e], s, e, is_table=False)
        for s, e in _drop_contained([(s, e) for s, e in trimmed if e > s])
    ]


def _chunk_dict(tokenizer: TokenizerLike, content: str, start: int, end: int, *, is_table: bool) -> dict[str, Any]:
    return {
        "tokens": count_tokens(tokenizer, content),
        "content": content,
        "chunk_order_index": -1,  # numbered once the whole document is assembled
        "is_table": is_table,
        "source_span": [start, end],
    }


# --------------------------------------------------------------------------- tables


def _assemble(before: str, body: str, after: str) -> str:
    lines: list[str] = []
    if before:
        lines += [CONTEXT_BEFORE_MARKER, before]
    lines.append(body)
    if after:
        lines += [CONTEXT_AFTER_MARKER, after]
    return "\n".join(lines)


def _with_context(
    tokenizer: TokenizerLike, body: str, before_src: str, after_src: str, budget: int, limit: int | None
) -> str:
    """Wrap ``body`` with ≤ ``budget`` context tokens per side, shrinking context to fit ``limit``."""
    n = budget
    while True:
        before = tail_tokens(tokenizer, before_src, n).strip()
        after = head_tokens(tokenizer, after_src, n).strip()
        content = _assemble(before, body, after)
        if limit is None or n == 0:
            return content
        excess = count_tokens(tokenizer, content) - limit
        if excess <= 0:
            return content
        n = max(0, n - (excess + 1) // 2 - 1)


def _table_chunks(
    tokenizer: TokenizerLike,
    text: str,
    span: TableSpan,
    context_bounds: tuple[int, int],
    cap: int,
    config: TableChunkerConfig,
) -> list[dict[str, Any]]:
    """Chunks for one table; context comes from ``text[lo:span.start]`` and ``text[span.end:hi]``."""
    lo, hi = context_bounds
    n = config.table_context_tokens
    window = 32 * n + 256  # chars: generous for any script, avoids encoding whole sections
    before_src = text[max(lo, span.start - window) : span.start]
    after_src = text[span.end : min(hi, span.end + window)]
    parts = split_table(tokenizer, text, span, cap)
    chunks = []
    for number, part in enumerate(parts, start=1):
        content = _with_context(tokenizer, part.body, before_src, after_src, n, config.embed_max_tokens)
        chunk = _chunk_dict(tokenizer, content, part.start, part.end, is_table=True)
        chunk.update(table_part=number, table_parts=len(parts))
        chunks.append(chunk)
    return chunks


# --------------------------------------------------------------------------- document


def chunk_document(
    tokenizer: TokenizerLike,
    text: str,
    *,
    config: TableChunkerConfig | None = None,
    split_by_character: str | None = None,
    split_by_character_only: bool = False,
    chunk_overlap_token_size: int = 100,
    chunk_token_size: int = 1200,
) -> list[dict[str, Any]]:
    """Chunk ``text`` table-aware; see the module docstring for the rules and chunk keys."""
    config = config or TableChunkerConfig()
    opts = _TextOptions(split_by_character, split_by_character_only, chunk_overlap_token_size, chunk_token_size)
    cap = config.table_max_tokens or chunk_token_size
    if config.embed_max_tokens is not None:
        cap = min(cap, config.embed_max_tokens)
    tables = find_table_spans(text)
    chunks: list[dict[str, Any]] = []
    cursor = 0
    for index, span in enumerate(tables):
        chunks += _text_chunks(tokenizer, text, cursor, span.start, opts, config.embed_max_tokens)
        next_start = tables[index + 1].start if index + 1 < len(tables) else len(text)
        table = _table_chunks(tokenizer, text, span, (cursor, next_start), cap, config)
        for chunk in table:
            chunk["table_index"] = index
        chunks += table
        cursor = span.end
    chunks += _text_chunks(tokenizer, text, cursor, len(text), opts, config.embed_max_tokens)
    for order, chunk in enumerate(chunks):
        chunk["chunk_order_index"] = order
    logger.debug("table-aware chunking: %d tables, %d chunks", len(tables), len(chunks))
    return chunks


def make_table_aware_chunker(
    table_max_tokens: int | None = None,
    table_context_tokens: int = 100,
    embed_max_tokens: int | None = None,
) -> Callable[..., list[dict[str, Any]]]:
    """Build a LightRAG ``chunking_func`` that keeps HTML tables intact.

    Args:
        table_max_tokens: largest table body kept in one chunk; larger tables are
            split on rows.  ``None`` (default) uses the ``chunk_token_size`` LightRAG
            passes (1200 by default).
        table_context_tokens: tokens of surrounding text added before and after each
            table chunk (default 100; 0 disables context).
        embed_max_tokens: hard cap on every chunk's ``tokens`` (set it to the
            embedder's ``max_token_size``); ``None`` (default) means no extra cap.

    Usage: ``LightRAG(..., chunking_func=make_table_aware_chunker(embed_max_tokens=8192))``.
    """
    config = TableChunkerConfig(table_max_tokens, table_context_tokens, embed_max_tokens)

    def table_aware_chunking(
        tokenizer: TokenizerLike,
        content: str,
        split_by_character: str | None = None,
        split_by_character_only: bool = False,
        chunk_overlap_token_size: int = 100,
        chunk_token_size: int = 1200,
    ) -> list[dict[str, Any]]:
        return chunk_document(
            tokenizer,
            content,
            config=config,
            split_by_character=split_by_character,
            split_by_character_only=split_by_character_only,
            chunk_overlap_token_size=chunk_overlap_token_size,
            chunk_token_size=chunk_token_size,
        )

    table_aware_chunking.config = config  # type: ignore[attr-defined]  # introspection in tests/logs
    return table_aware_chunking
