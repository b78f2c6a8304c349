"""Locate HTML tables and their rows by character offsets (pure, never raises on bad markup).

A tag-depth scanner rather than a parser tree: the chunker needs exact source
offsets to stay lossless, and BeautifulSoup re-serialises markup.  Rules:

* Tag names are matched case-insensitively (``<TABLE>`` works) with any attributes.
* ``<table>`` tags inside HTML comments are ignored.
* A nested table belongs to its outermost (top-level) table.
* A stray ``</table>`` with no open table is plain text.
* An unclosed table (no matching ``</table>``) runs to the end of the document,
  as in browsers and ``html.parser``; its span has ``closed=False``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TABLE_TAG_RE = re.compile(r"<!--.*?(?:-->|\Z)|<(/?)(table)(?=[\s/>])[^>]*>", re.I | re.S)
_ROW_TAG_RE = re.compile(
    r"<!--.*?(?:-->|\Z)|<(/?)(table|thead|tbody|tfoot|tr)(?=[\s/>])[^>]*>", re.I | re.S
)
_TH_RE = re.compile(r"<th(?=[\s/>])", re.I)
_TABLE_CLOSE_END_RE = re.compile(r"</table\s*>\s*\Z", re.I)


@dataclass(frozen=True)
class TableSpan:
    """A top-level table: ``text[start:end]``; ``closed`` is False for an unclosed table."""

    start: int
    end: int
    closed: bool = True


@dataclass(frozen=True)
class Row:
    """A top-level ``<tr>`` of a table: ``text[start:end]``; ``in_thead`` if inside ``<thead>``."""

    start: int
    end: int
    in_thead: bool = False


@dataclass(frozen=True)
class TableLayout:
    """Rows of one table plus the end of its opening ``<table …>`` tag."""

    open_tag_end: int
    rows: tuple[Row, ...]


def find_table_spans(text: str) -> list[TableSpan]:
    """Return the top-level tables of ``text`` in document order."""
    spans: list[TableSpan] = []
    depth, start = 0, 0
    for m in _TABLE_TAG_RE.finditer(text):
        if m.group(2) is None:  # a comment
            continue
        if not m.group(1):
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(TableSpan(start, m.end(), True))
    if depth > 0:
        spans.append(TableSpan(start, len(text), False))
    return spans


def table_layout(text: str, span: TableSpan) -> TableLayout:
    """Find the top-level rows of the table at ``span`` (rows of nested tables are ignored).

    A row without ``</tr>`` ends where the next top-level row starts, or at the
    table's closing tag.
    """
    depth, in_thead = 0, False
    open_tag_end = span.start
    rows: list[Row] = []
    row_start: int | None = None
    row_thead = False

    def close_row(at: int) -> None:
        nonlocal row_start
        if row_start is not None:
            rows.append(Row(row_start, at, row_thead))
            row_start = None

    for m in _ROW_TAG_RE.finditer(text, span.start, span.end):
        closing, name = m.group(1), (m.group(2) or "").lower()
        if not name:
            continue
        if name == "table":
            depth += -1 if closing else 1
            if depth == 1 and not closing and open_tag_end == span.start:
                open_tag_end = m.end()
            if depth == 0:
                close_row(m.start())
            continue
        if depth != 1:
            continue
        if name == "tr":
            close_row(m.end() if closing else m.start())
            if not closing:
                row_start, row_thead = m.start(), in_thead
        elif name in ("thead", "tbody", "tfoot"):
            close_row(m.start())
            in_thead = name == "thead" and not closing
    close_row(span.end)
    return TableLayout(open_tag_end, tuple(rows))


def header_rows(text: str, layout: TableLayout) -> tuple[Row, ...]:
    """Header rows: every top-level row inside ``<thead>``, else the first row if it has ``<th>``."""
    in_head = tuple(r for r in layout.rows if r.in_thead)
    if in_head:
        return in_head
    if layout.rows:
        first = layout.rows[0]
        if _TH_RE.search(text, first.start, first.end):
            return (first,)
    return ()


def header_text(text: str, rows: tuple[Row, ...]) -> str:
    """Markup to repeat at the top of each later table part (wrapped in ``<thead>`` if it was)."""
    if not rows:
        return ""
    body = "".join(text[r.start : r.end] for r in rows)
    return f"<thead>{body}</thead>" if rows[0].in_thead else body


def ends_with_table_close(fragment: str) -> bool:
    """True if ``fragment`` already ends with a ``</table>`` tag."""
    return bool(_TABLE_CLOSE_END_RE.search(fragment))
