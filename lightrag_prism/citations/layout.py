"""Where a piece of a document sits: its pages, its section path and its character span. Pure: no I/O, no LightRAG.

A document's pages travel inside its text, because LightRAG stores a document as one string and any process on
shared storages may chunk it later:

* a form feed (``\\f``, what ``pdftotext`` and our PDF/DOCX readers put between pages) becomes one marker line at
  the start of each page, ``<!-- page N -->`` (:func:`mark_pages`, run before LightRAG's sanitiser, which deletes
  control characters such as ``\\f``); the marker is an HTML comment, so rendered Markdown does not show it;
* :class:`Layout` takes the markers out again before chunking, so the chunks (and their embeddings, extraction and
  ids) are those of the text without markers, and maps every chunk back: pages from the markers, the section path
  from the Markdown headings (``#`` lines outside code fences; HTML, DOCX and PDF outlines reach the chunker as
  such lines, ``inputs.py``), the span in the document as stored.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

PAGE_BREAK = "\f"
PAGE_MARKER = re.compile(r"<!-- page (\d{1,7}) -->\n?")
SECTION_SEPARATOR = " > "
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def page_marker(number: int) -> str:
    return f"<!-- page {number} -->"


def join_pages(pages: list[str]) -> str:
    """The text of ``pages`` in order, each after its marker line (a one-page document has pages too)."""
    return "\n".join(f"{page_marker(number)}\n{page}" for number, page in enumerate(pages, 1))


def mark_pages(text: str) -> str:
    """``text`` with its form feeds (page breaks) turned into a marker line at the start of every page, page 1
    included; text without a form feed is returned unchanged (its chunks then have no pages)."""
    return join_pages(text.split(PAGE_BREAK)) if PAGE_BREAK in text else text


@dataclass(frozen=True)
class Citation:
    """Where a chunk came from: ``pages`` is ``[first, last]`` (1-based) or None for text without pages; ``span`` is
    ``[start, end)`` in the document as stored (page markers included)."""

    pages: tuple[int, int] | None
    section: tuple[str, ...]
    span: tuple[int, int]

    def section_path(self) -> str | None:
        return SECTION_SEPARATOR.join(self.section) or None


@dataclass(frozen=True)
class Layout:
    """A document's text without page markers (``text``: what the chunker splits) and the maps back."""

    text: str
    removed_at: list[int] = field(default_factory=list)  # offsets in ``text`` where a marker was taken out
    removed_total: list[int] = field(default_factory=list)  # characters taken out up to and including each one
    page_starts: list[int] = field(default_factory=list)  # offset in ``text`` where each page begins
    page_numbers: list[int] = field(default_factory=list)
    heading_starts: list[int] = field(default_factory=list)  # line start in ``text`` of each heading
    heading_paths: list[tuple[str, ...]] = field(default_factory=list)  # the section path that heading opens

    @classmethod
    def parse(cls, document: str) -> "Layout":
        pieces, removed_at, removed_total, page_starts, page_numbers = [], [], [], [], []
        clean_length = total = cursor = 0
        for match in PAGE_MARKER.finditer(document):
            pieces.append(document[cursor:match.start()])
            clean_length += match.start() - cursor
            total += match.end() - match.start()
            removed_at.append(clean_length)
            removed_total.append(total)
            page_starts.append(clean_length)
            page_numbers.append(int(match.group(1)))
            cursor = match.end()
        pieces.append(document[cursor:])
        text = "".join(pieces)
        heading_starts, heading_paths = _headings(text)
        return cls(text, removed_at, removed_total, page_starts, page_numbers, heading_starts, heading_paths)

    def citation(self, start: int, end: int) -> Citation:
        """The citation of ``text[start:end]`` (a chunk's source text, ``end`` exclusive)."""
        end = max(end, start + 1)
        pages = None
        if self.page_starts:
            pages = (self._page_at(start), self._page_at(end - 1))
        return Citation(pages, self.section_at(start), (self.to_document(start, True), self.to_document(end, False)))

    def section_at(self, offset: int) -> tuple[str, ...]:
        """The heading path in force at ``offset`` (a chunk starting on a heading line is in that heading's
        section)."""
        index = bisect.bisect_right(self.heading_starts, offset) - 1
        return self.heading_paths[index] if index >= 0 else ()

    def to_document(self, offset: int, is_start: bool) -> int:
        """``offset`` in :attr:`text` as an offset in the document with its markers. A start at a page boundary
        lies after the page's marker; an end there lies before it."""
        index = (bisect.bisect_right if is_start else bisect.bisect_left)(self.removed_at, offset) - 1
        return offset + (self.removed_total[index] if index >= 0 else 0)

    def _page_at(self, offset: int) -> int:
        index = bisect.bisect_right(self.page_starts, offset) - 1
        return self.page_numbers[max(index, 0)]  # text before the first marker counts as the first page

    def locate(self, contents: list[str]) -> list[tuple[int, int] | None]:
        """Spans in :attr:`text` of chunk contents a chunker returned without them, in order (chunks may overlap,
        so each search starts after the previous chunk's start); None for a content that is not a slice of it."""
        spans: list[tuple[int, int] | None] = []
        cursor = 0
        for content in contents:
            piece = content.strip()
            found = self.text.find(piece, cursor) if piece else -1
            if found < 0 and piece:
                found = self.text.find(piece)
            if found < 0:
                spans.append(None)
                continue
            spans.append((found, found + len(piece)))
            cursor = found + 1
        return spans


def _headings(text: str) -> tuple[list[int], list[tuple[str, ...]]]:
    """Line start and section path of every ATX heading of ``text`` outside fenced code."""
    starts, paths, stack = [], [], []  # stack: (level, title) of the open sections
    fence = None
    offset = 0
    for line in text.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        elif (heading := _HEADING.match(line.rstrip("\r\n"))) is not None:
            level, title = len(heading.group(1)), " ".join(heading.group(2).split())
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            starts.append(offset)
            paths.append(tuple(t for _, t in stack))
        offset += len(line)
    return starts, paths
