"""Files a user indexes: which types are read, how, and the one-line errors for the rest.

* ``.txt`` and ``.md`` are read as UTF-8; text that is not valid UTF-8 is refused with the file and byte offset
  (replacing bad bytes silently stored ``\\ufffd`` garbage in the index);
* ``.html``/``.htm`` become text with BeautifulSoup: scripts, styles and markup go, every ``<table>`` stays as
  HTML so the table-aware chunker keeps it whole with its context;
* any other type is refused by name, whether named directly or found in a folder (a folder's refused files are
  reported, the rest indexed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

TEXT_SUFFIXES = (".txt", ".md")
HTML_SUFFIXES = (".html", ".htm")
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES


class InputError(Exception):
    """A file that cannot be indexed, as one line naming it."""


@dataclass
class Collected:
    documents: list[tuple[Path, str]] = field(default_factory=list)  # (file, its text)
    refused: list[str] = field(default_factory=list)  # "name: why", files of folders that were skipped


def html_to_text(html: str) -> str:
    """The readable text of an HTML page, its tables kept as HTML (for the table-aware chunker)."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    for table in soup.find_all("table"):
        if table.find_parent("table") is None:
            table.replace_with(NavigableString(f"\n{table}\n"))
    text = soup.get_text("\n")
    return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", text)).strip()


def read_document(path: Path) -> str:
    """The text of one supported file; :class:`InputError` for an unsupported type or invalid UTF-8."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InputError(f"{path}: unsupported file type {suffix or '(none)'!r}; supported: "
                         f"{' '.join(SUPPORTED_SUFFIXES)} (convert other formats to text first)")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 at byte {exc.start} ({exc.reason}); convert it to UTF-8 "
                         f"first, e.g. iconv -f latin1 -t utf-8") from None
    return html_to_text(text) if suffix in HTML_SUFFIXES else text


def collect_documents(paths: list[str]) -> Collected:
    """The non-empty documents under ``paths`` (files, folders recursively), read once."""
    collected = Collected()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"No such file or directory: {raw}")
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if file.suffix.lower() not in SUPPORTED_SUFFIXES:
                    collected.refused.append(f"{file}: unsupported file type")
                    continue
                _add(collected, file)
        else:
            _add(collected, path)
    return collected


def _add(collected: Collected, file: Path) -> None:
    text = read_document(file)
    if text.strip():
        collected.documents.append((file, text))
