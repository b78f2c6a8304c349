"""Numbered citations in an LLM's answer, checked against the references the query returned. Pure.

The answer is untrusted text: a marker ``[n]`` (also ``[n, m]`` and ``[^n]``) whose ``n`` is not a returned
``reference_id`` is taken out (with the space before it when nothing valid is left), and a line of the answer's
references list that starts with such a marker (``* [7] file.pdf``) goes whole. What looks like a marker but is
not one stays: an index (``a[0]``, a word character before it) and a Markdown link (``[1](url)``).

:class:`CitationFilter` works on a stream: ``feed`` returns what is safe to show now and holds back only the
start of a line that may still become a reference entry, or a ``[`` that may still become a marker.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"(\s*)(?<!\w)\[\^?(\d{1,4}(?:\s*,\s*\^?\d{1,4})*)\](?!\()")
_ENTRY = re.compile(r"^\s*(?:[-*+]\s*)?\[\^?(\d{1,4})\]")
_ENTRY_PREFIX = re.compile(r"^\s*(?:[-*+]\s*)?(?:\[\^?\d{0,4})?$")  # could still become an entry's start
_MARKER_PREFIX = re.compile(r"\[\^?[\d,\s^]*\]?$")  # an open (or just closed) marker at the end of the text
CITATION_INSTRUCTION = (
    "Cite the Document Chunks you use inline, right after the sentence they support, with their reference_id in "
    "square brackets, e.g. [1] or [1][3]. Use only reference_id values from the Reference Document List.")


class CitationFilter:
    """Drops the markers of ``valid_ids``' complement from an answer given whole or piece by piece."""

    def __init__(self, valid_ids) -> None:
        self.valid = {str(i) for i in valid_ids}
        self.dropped: list[str] = []  # the markers taken out, as written
        self._line = ""  # the current line's text not shown yet
        self._line_shown = False  # part of the current line was shown: it can no longer go whole
        self._previous = ""  # the last character shown (for the "no word character before a marker" rule)

    def feed(self, text: str) -> str:
        self._line += text
        shown = []
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            shown.append(self._finish(line, "\n"))
        if not self._line_shown:
            entry = _ENTRY.match(self._line)
            if _ENTRY_PREFIX.match(self._line) or (entry and entry.group(1) not in self.valid):
                return "".join(shown)  # may still be, or is, a references line to drop whole
        cut = len(self._line)
        bracket = self._line.rfind("[")
        if bracket >= 0 and _MARKER_PREFIX.match(self._line, bracket):
            cut = bracket
        cut = len(self._line[:cut].rstrip())  # the space before a marker goes with it when it is dropped
        if cut:
            piece, self._line = self._line[:cut], self._line[cut:]
            shown.append(self._markers(piece))
            self._line_shown = True
        return "".join(shown)

    def flush(self) -> str:
        text = self._finish(self._line, "")
        self._line = ""
        return text

    def _finish(self, line: str, end: str) -> str:
        whole = not self._line_shown
        self._line_shown = False
        if whole and (entry := _ENTRY.match(line)) and entry.group(1) not in self.valid:
            self.dropped.append(f"[{entry.group(1)}]")
            return ""
        return self._markers(line) + end

    def _markers(self, text: str) -> str:
        combined, last = self._previous + text, len(self._previous)  # the character before, for the lookbehind
        pieces = []
        for match in _MARKER.finditer(combined, last):
            pieces += [combined[last:match.start()], self._keep_valid(match)]
            last = match.end()
        result = "".join(pieces) + combined[last:]
        self._previous = result[-1:] or self._previous
        return result

    def _keep_valid(self, match: re.Match) -> str:
        ids = [part.strip().lstrip("^") for part in match.group(2).split(",")]
        kept = [i for i in ids if i in self.valid]
        self.dropped += [f"[{i}]" for i in ids if i not in self.valid]
        if len(kept) == len(ids):
            return match.group(0)
        return f"{match.group(1)}[{', '.join(kept)}]" if kept else ""
