"""Code identifiers in technical prose (a manual, a README): character spans and their one canonical name.

An English NER model sees ``work_mem``, ``pg_hba.conf``, ``--data-checksums`` or ``connect()`` as common words, or
cuts them at punctuation; a reader of a manual sees the things the text is about. Found by shape, in any sentence:

* ``snake_case`` words (``work_mem``, ``pg_stat_activity``), ``CamelCase`` words of two humps or more
  (``ResponseError``), dotted names (``pkg.client.Response``, ``postgresql.conf``; not abbreviations such as
  "U.S." or "e.g.", whose parts are single letters);
* calls, named without their argument list (``make_widget(size, ...)`` is ``make_widget``);
* long command-line options (``--data-checksums``).

The name is the identifier as written, so ``make_widget``, ``make_widget()`` and ``make_widget(size`` are one node.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(
    r"(?<![\w.-])(?:"
    r"--[a-z][a-z0-9]*(?:-[a-z0-9]+)*"  # a long option
    r"|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"  # a dotted name
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"  # CamelCase
    r"|[A-Za-z_][A-Za-z0-9_]*(?=\()"  # a call's name
    r")")
# a plain word is a call's name when an empty or an argument list follows it at once: "connect()", "open(mode=",
# "copy(src, dst)"; not "function(s)"
_CALL_ARGUMENTS = re.compile(r"\((?:\)|[A-Za-z_]\w*\s*[,=)])")


def identifier_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, canonical name)`` of each identifier in ``text``, in order."""
    spans = []
    for match in _IDENTIFIER.finditer(text):
        name = match.group(0)
        start, end = match.span()
        if "." in name:
            name = name.rstrip(".")
            parts = name.split(".")
            if all(len(part) == 1 for part in parts) or not any(len(part) > 2 for part in parts):
                continue  # an abbreviation ("U.S", "e.g", "Ph.D")
            end = start + len(name)
        elif "_" not in name and not name.startswith("--") and not any(c.isupper() for c in name[1:]):
            if not _CALL_ARGUMENTS.match(text, end) or text.startswith("(s)", end):
                continue
        spans.append((start, end, name))
    return spans
