"""Extraction-prompt add-on for table chunks (pure text helpers).

The integration that appends :func:`table_prompt_addon` to LightRAG's extraction
prompt for table chunks lives elsewhere; this module only provides the text.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

CONTEXT_BEFORE_MARKER = "[Context before table]"
CONTEXT_AFTER_MARKER = "[Context after table]"

_TABLE_TAG_RE = re.compile(r"<(table|tr)(?=[\s/>])", re.I)
_MAX_HEADER_CELLS = 30
_MAX_CELL_CHARS = 60

TABLE_EXTRACTION_GUIDANCE = """---Table Guidance---
The input contains an HTML table (possibly one part of a larger table, with its header row repeated).
Text under "[Context before table]" and "[Context after table]" only describes the table: use it to name
the table's subject, period and units, but extract facts from it only if it states them itself.
1. Header cells name attributes or periods (e.g. "Revenue", "2024-Q3", "FY2023"); the first cell of a row
   usually names the entity the row is about (a company, segment, product, metric).
2. Extract the row subjects and column subjects as entities; use the most specific name the table gives
   (e.g. "TSMC 3nm revenue share", not "share").
3. For each meaningful cell, state the fact with its row, column, value, unit and period in the relation or
   entity description, e.g. "Apple iPhone revenue was 39.3 billion USD in 2024-Q3".
4. Units and scale: take them from the caption, header or context ("in millions", "%", "NT$") and write
   them out; never drop a unit or change a number.
5. Periods: keep the exact period label (year, quarter, half, month, date) from the header or context in
   the description; when several periods appear, describe each value with its own period.
6. Relate entities that share a row (entity ↔ metric) and link comparisons across periods only when the
   table shows both values.
7. Ignore layout-only cells (empty cells, repeated headers, totals without a label) unless they carry a value.
"""


def is_table_chunk(content: str) -> bool:
    """True if ``content`` contains an HTML ``<table>`` or ``<tr>`` tag (case-insensitive)."""
    return bool(content) and bool(_TABLE_TAG_RE.search(content))


def _header_cells(content: str) -> list[str]:
    """Header cell texts of the first table in ``content`` (``<th>`` cells), via BeautifulSoup."""
    from bs4 import BeautifulSoup  # lazy: only needed for table chunks

    try:
        soup = BeautifulSoup(content, "html.parser")
        table = soup.find("table")
        cells = (table or soup).find_all("th", limit=_MAX_HEADER_CELLS)
    except Exception:  # noqa: BLE001 - malformed markup must never break extraction
        logger.debug("could not parse table header cells", exc_info=True)
        return []
    texts = (" ".join(cell.get_text(" ", strip=True).split()) for cell in cells)
    return [t[:_MAX_CELL_CHARS] for t in texts if t]


def table_prompt_addon(chunk_content: str) -> str:
    """Text to append to the extraction prompt for ``chunk_content``; "" for non-table chunks.

    Adds :data:`TABLE_EXTRACTION_GUIDANCE` and, when header cells are found, a line
    listing them so the model anchors each value to its column.
    """
    if not is_table_chunk(chunk_content):
        return ""
    cells = _header_cells(chunk_content)
    if not cells:
        return TABLE_EXTRACTION_GUIDANCE
    return TABLE_EXTRACTION_GUIDANCE + "Table header cells: " + " | ".join(cells) + "\n"
