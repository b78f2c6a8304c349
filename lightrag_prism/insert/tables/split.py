"""Split one HTML table into parts of at most ``cap`` tokens on row boundaries."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .html import (
    TableLayout,
    TableSpan,
    ends_with_table_close,
    header_rows,
    header_text,
    table_layout,
)
from .token_budget import TokenizerLike, count_tokens, split_by_tokens

logger = logging.getLogger(__name__)

_CLOSE = "</table>"


@dataclass(frozen=True)
class TablePart:
    """``text[start:end]`` of the source, rendered as ``body`` (with any added tag/header)."""

    start: int
    end: int
    body: str


@dataclass(frozen=True)
class _Frame:
    """What every part after the first gets around its rows."""

    open_tag: str
    header: str
    last_header_piece: int  # parts starting after this piece get the header repeated


def _row_pieces(span: TableSpan, layout: TableLayout) -> list[tuple[int, int]]:
    """Tile the table with pieces cut at each top-level row start (the prefix joins row 1)."""
    cuts = [row.start for row in layout.rows[1:]]
    bounds = [span.start, *cuts, span.end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _frame(tokenizer: TokenizerLike, text: str, span: TableSpan, layout: TableLayout, cap: int) -> _Frame:
    """Pick the wrapper for later parts; drop parts of it that would eat over half the budget."""
    heads = header_rows(text, layout)
    open_tag = text[span.start : layout.open_tag_end] or "<table>"
    header = header_text(text, heads)
    if count_tokens(tokenizer, open_tag) > cap // 4:
        open_tag = "<table>"  # an attribute-heavy tag is not worth repeating
    if count_tokens(tokenizer, open_tag + header + _CLOSE) > cap // 2:
        logger.debug("header row too large to repeat in each table part (cap=%d)", cap)
        header = ""
    last = layout.rows.index(heads[-1]) if heads else -1
    return _Frame(open_tag, header, last)


def _render(text: str, pieces: list[tuple[int, int]], first: int, last: int, frame: _Frame) -> TablePart:
    start, end = pieces[first][0], pieces[last][1]
    fragment = text[start:end]
    prefix = ""
    if first > 0:
        prefix = frame.open_tag + (frame.header if first > frame.last_header_piece else "")
    suffix = "" if ends_with_table_close(fragment) else _CLOSE
    return TablePart(start, end, prefix + fragment + suffix)


def _raw_parts(tokenizer: TokenizerLike, text: str, start: int, end: int, cap: int) -> list[TablePart]:
    """Last resort for a piece over the cap: token-sized raw slices, no wrapper added."""
    logger.debug("table piece of %d chars exceeds %d tokens: splitting by tokens", end - start, cap)
    return [TablePart(s, e, text[s:e]) for s, e in split_by_tokens(tokenizer, text, cap, start, end)]


def _emit(tokenizer, text, pieces, first, last, frame, cap) -> list[TablePart]:  # noqa: ANN001
    """Render pieces ``first..last``; halve the group until each rendering fits ``cap``."""
    part = _render(text, pieces, first, last, frame)
    if count_tokens(tokenizer, part.body) <= cap:
        return [part]
    if first == last:
        return _raw_parts(tokenizer, text, pieces[first][0], pieces[first][1], cap)
    mid = (first + last) // 2
    return _emit(tokenizer, text, pieces, first, mid, frame, cap) + _emit(
        tokenizer, text, pieces, mid + 1, last, frame, cap
    )


def _groups(counts: list[int], first_budget: int, budget: int) -> list[tuple[int, int]]:
    """Greedy packing of consecutive pieces into ``(first, last)`` groups.

    The first group only gets a closing tag added, so it has a larger budget than
    the later ones, which also carry the opening tag and the repeated header.
    """
    groups: list[tuple[int, int]] = []
    first, total, limit = 0, 0, first_budget
    for i, n in enumerate(counts):
        if i > first and total + n > limit:
            groups.append((first, i - 1))
            first, total, limit = i, 0, budget
        total += n
    if counts:
        groups.append((first, len(counts) - 1))
    return groups


def split_table(tokenizer: TokenizerLike, text: str, span: TableSpan, cap: int) -> list[TablePart]:
    """Render the table at ``span`` as parts whose ``body`` has at most ``cap`` tokens.

    The parts' source ranges tile ``span`` exactly, in order.  A table that fits
    stays whole (an unclosed table gets a closing ``</table>``).
    """
    whole = text[span.start : span.end]
    whole_body = whole if ends_with_table_close(whole) else whole + _CLOSE
    if count_tokens(tokenizer, whole_body) <= cap:
        return [TablePart(span.start, span.end, whole_body)]
    layout = table_layout(text, span)
    pieces = _row_pieces(span, layout)
    frame = _frame(tokenizer, text, span, layout, cap)
    budget = cap - count_tokens(tokenizer, frame.open_tag + frame.header + _CLOSE)
    if budget <= 0:
        return _raw_parts(tokenizer, text, span.start, span.end, cap)
    counts = [count_tokens(tokenizer, text[a:b]) for a, b in pieces]
    parts: list[TablePart] = []
    for first, last in _groups(counts, cap - count_tokens(tokenizer, _CLOSE), budget):
        parts.extend(_emit(tokenizer, text, pieces, first, last, frame, cap))
    return parts
