"""Text as structure: the lines of a chunk to read as sentences, and its title.

The offline extractor parses what :func:`prose_lines` returns and makes the title the chunk's topic
(``insert/extraction/spacy_extractor.py``); the bridge step of ``prism`` and ``hipporag`` finds a passage's subject by
the same title (``retrievers/views/ranking.py``). Markdown is read as structure: a heading on the first line is the
title (without its ``#``), a later heading names a section and is left out; list markers and emphasis marks go; code
blocks are left out (code is not prose). A plain first line is the title when it looks like one, as in
Wikipedia-style passages. Hard-wrapped sentences are joined (:func:`is_wrapped`). Pure: no I/O, no spaCy.
"""

from __future__ import annotations

import re
from typing import Callable

MAX_TITLE_WORDS = 12
MIN_WRAPPED_CHARS = 40  # a line broken by a fill at 72 to 120 columns is longer than a header or a greeting
_SENTENCE_END = frozenset(".!?:;\"'”’)")
_TITLE_PARTS = re.compile(r"\s+[-–—|]\s+")  # "page - section", "record | kind": spaced dashes and bars
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$")  # a Markdown ATX heading
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_FENCE = re.compile(r"^(```|~~~)")
_FIELD = re.compile(r"^[A-Z][\w .'-]{0,30}:\s")  # "To: Tomas Reyes", "Priya: blade 2 ...": a record, not a continuation

#: Whether a title (or a part of one) can name something; the extractor's also rejects stop words only.
TitleCheck = Callable[[str], bool]


def any_title(_: str) -> bool:
    return True


def prose_lines(text: str, valid: TitleCheck = any_title) -> tuple[str | None, list[str]]:
    """(title, the lines to read) of a chunk (see the module doc); ``valid`` vets the title."""
    lines, in_code, title = [], False, None
    wrapped = False  # the last line read broke mid-sentence: the next one continues its sentence
    for raw in str(text).splitlines():
        line = raw.strip()
        if _FENCE.match(line):
            in_code, wrapped = not in_code, False
            continue
        if in_code or not line:
            wrapped = False
            continue
        heading = _HEADING.match(line)
        if heading:
            if not lines and title is None:
                title = title_of(heading.group(1), valid)
            wrapped = False
            continue
        starts_item = bool(_LIST_MARKER.match(line) or _FIELD.match(line)) or line.startswith("|")
        prose = _EMPHASIS.sub("", _LIST_MARKER.sub("", line))
        if wrapped and not starts_item:
            lines[-1] = f"{lines[-1]} {prose}"
        else:
            lines.append(prose)
        wrapped = is_wrapped(raw)
    first = title_of(lines[0], valid) if title is None and len(lines) > 1 else None
    if first:
        title, lines = first, lines[1:]
    return (title_subject(title, lines, valid) if title else title), lines


def title_subject(title: str, lines: list[str], valid: TitleCheck = any_title) -> str:
    """The name a compound title is about: of "Vantor Composites - supplier record" or "Grant award - Project
    Selkie" (page and section, record and kind, subject line), the first part the text names; the whole title when
    it has one part or the text names none of them."""
    parts = [part.strip() for part in _TITLE_PARTS.split(title) if part.strip()]
    if len(parts) < 2:
        return title
    body = " ".join(lines)
    named = [part for part in parts if valid(part) and re.search(rf"(?<!\w){re.escape(part)}(?!\w)", body)]
    return named[0] if named else title


def is_wrapped(raw: str) -> bool:
    """Whether a line was broken by hard wrapping inside a sentence (text filled to a width, as notes, e-mails and
    Markdown often are): long, and not ending a sentence, a clause before a list, or a Markdown hard break (two
    trailing spaces). Short lines without final punctuation are records ("To: Tomas Reyes", "Dear Tomas,")."""
    line = raw.rstrip("\n")
    if raw.endswith("  ") or line.endswith("\\"):
        return False
    text = line.strip()
    return len(text) >= MIN_WRAPPED_CHARS and text[-1] not in _SENTENCE_END


def title_of(line: str, valid: TitleCheck = any_title) -> str | None:
    """The entity name a title line stands for, or None when ``line`` does not look like a title."""
    text = line.strip()
    if not text or text[-1] in ".!?:;," or len(text.split()) > MAX_TITLE_WORDS:
        return None
    name = _PARENTHETICAL.sub("", text).strip()
    letters = re.search(r"[^\W\d_]", name)
    return name if letters and not re.search(r"[\[\]{}<>|\\]", name) and valid(name) else None


def passage_title(text: str) -> str | None:
    """The title :func:`prose_lines` finds in ``text`` (any title counts)."""
    return prose_lines(text)[0]
