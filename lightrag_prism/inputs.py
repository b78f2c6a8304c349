"""Files a user indexes: which types are read, how, and the one-line errors for the rest.

* ``.txt`` and ``.md`` are read as UTF-8; text that is not valid UTF-8 is refused with the file, the byte offset
  and the encoding it most likely is (replacing bad bytes silently stored ``\\ufffd`` garbage in the index), and a
  binary file (NUL bytes) is called binary;
* ``.html``/``.htm`` become text with BeautifulSoup: scripts, styles and markup go, every ``<table>`` stays as
  HTML so the table-aware chunker keeps it whole with its context, and headings become Markdown headings (the
  offline extractor reads those as structure, not sentences);
* ``.pdf`` (pypdf: the text layer of every page) and ``.docx`` (python-docx: paragraphs, Title and Heading styles
  as Markdown headings, tables as HTML), with the ``documents`` extra; without it they are refused with the
  install command;
* any other type is refused by name, whether named directly or found in a folder (a folder's refused files are
  reported, the rest indexed);
* a file with no text (empty, markup only, a scanned PDF without a text layer) is reported as skipped, with why.

:func:`collect_documents` never stops at one bad file: each file it cannot index (any of the above, or unreadable)
is skipped with its reason in ``Collected.refused`` and the rest are read, as a user indexing a folder of mixed
files expects.

LightRAG stores a document's source as its file *name* and refuses a second document with a name it already holds
(a "duplicate"), so :func:`source_names` gives files that share a name distinct ones (``a/notes.txt`` and
``b/notes.txt`` become ``a__notes.txt`` and ``b__notes.txt``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from .citations.layout import join_pages
from .errors import extra_install_hint

TEXT_SUFFIXES = (".txt", ".md")
HTML_SUFFIXES = (".html", ".htm")
# read with pypdf / python-docx (the ``documents`` extra; LightRAG Server's ``api`` extra installs them too)
OFFICE_SUFFIXES = (".pdf", ".docx")
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + OFFICE_SUFFIXES
BINARY_SNIFF_BYTES = 8192  # a NUL byte this early: not text in any encoding a user would index
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class InputError(Exception):
    """A file that cannot be indexed, as one line naming it."""


@dataclass
class Collected:
    documents: list[tuple[Path, str]] = field(default_factory=list)  # (file, its text)
    refused: list[str] = field(default_factory=list)  # "file: why" of each file skipped
    partial: list[str] = field(default_factory=list)  # "file: what was not read" of each file indexed in part


def markdown_heading(level: int, text: str) -> str:
    """A heading of a converted document as a Markdown line, so the extractor reads it as structure (a title, a
    section), never as a sentence or part of an entity (``insert/extraction/spacy_extractor.prose_lines``)."""
    text = " ".join(text.split())
    return f"\n{'#' * min(max(level, 1), 6)} {text}\n" if text else "\n"


def html_to_text(html: str) -> str:
    """The readable text of an HTML page, its tables kept as HTML (for the table-aware chunker) and its headings as
    Markdown headings."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    for table in soup.find_all("table"):
        if table.find_parent("table") is None:
            table.replace_with(NavigableString(f"\n{table}\n"))
    for heading in soup.find_all(re.compile(r"^h[1-6]$")):
        heading.replace_with(NavigableString(markdown_heading(int(heading.name[1]), heading.get_text(" "))))
    text = soup.get_text("\n")
    return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", text)).strip()


def _office_library(module: str, path: Path):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{path}: reading {path.suffix} files needs {module}: "
                         f"{extra_install_hint('documents')}") from None


def pdf_text(path: Path, notes: list[str] | None = None) -> str:
    """The text layer of every page, read page by page (pypdf's layout-free extraction), each page after its page
    marker (``citations/layout.py``) and the PDF's outline entries as Markdown headings.
    A page pypdf cannot read is left empty and named in ``notes``, the others are kept; a scanned PDF gives no text.
    An encrypted PDF opens when it needs no password (permissions only); otherwise it is refused."""
    pypdf = _office_library("pypdf", path)
    try:
        return read_pdf(pypdf.PdfReader(str(path)), path, notes)
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files
        raise InputError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from None


def read_pdf(reader, name, notes: list[str] | None = None, password: str | None = None) -> str:
    """:func:`pdf_text` of an open ``pypdf.PdfReader`` (also LightRAG Server's uploads, ``server/integration.py``);
    ``name`` names the file in errors and notes."""
    if reader.is_encrypted and not reader.decrypt(password or ""):
        raise InputError(f"{name}: the PDF is encrypted with a password; decrypt it first, e.g. "
                         f"qpdf --password=... --decrypt {name} decrypted.pdf")
    with _PypdfProblems() as problems:
        pages = [_page_text(page, number, problems, name, notes) for number, page in enumerate(reader.pages, 1)]
    for page_index, level, title in _pdf_outline(reader):
        if 0 <= page_index < len(pages):
            pages[page_index] = _with_heading(pages[page_index], level, title)
    return join_pages(pages) if any(pages) else ""


class _PypdfProblems(logging.Handler):
    """What pypdf logs while it reads (it reads a damaged content stream as empty and only logs why)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> "_PypdfProblems":
        logger = logging.getLogger("pypdf")
        self._propagate, logger.propagate = logger.propagate, False  # said once, in the file's note
        logger.addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        logger = logging.getLogger("pypdf")
        logger.removeHandler(self)
        logger.propagate = self._propagate


def _page_text(page, number: int, problems: _PypdfProblems, name, notes: list[str] | None) -> str:
    """One page's text; a page that cannot be read (pypdf raised, or logged a problem and gave no text) is empty
    and said in ``notes``. A blank page gives "" without a note."""
    problems.messages.clear()
    try:
        text = (page.extract_text() or "").strip()
        problem = None if text or not problems.messages else problems.messages[0]
    except Exception as exc:  # noqa: BLE001 - a damaged page: the others are still worth indexing
        text, problem = "", f"{type(exc).__name__}: {exc}"
    if problem and notes is not None:
        notes.append(f"{name}: page {number} could not be read ({problem}); the other pages are indexed")
    return text


def _pdf_outline(reader) -> list[tuple[int, int, str]]:
    """(page index, level, title) of every outline entry (bookmark) that points to a page, in outline order."""
    entries = []

    def walk(items, level):
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                entries.append((reader.get_destination_page_number(item), level, str(item.title)))
            except Exception:  # noqa: BLE001 - an entry pointing nowhere (named destination lost, external link)
                continue
    try:
        walk(reader.outline, 1)
    except Exception:  # noqa: BLE001 - a damaged outline: the text without section paths
        return []
    return entries


def _with_heading(page: str, level: int, title: str) -> str:
    """``page`` with the line that reads ``title`` made a Markdown heading, or the heading put first when no line
    reads it (the bookmark's title is then the section's name, not text of the page)."""
    wanted = " ".join(title.split()).casefold()
    lines = page.split("\n")
    for i, line in enumerate(lines):
        if " ".join(line.split()).casefold() == wanted:
            lines[i] = markdown_heading(level, line).strip()
            return "\n".join(lines)
    return markdown_heading(level, title).strip() + "\n" + page


def docx_text(path: Path) -> str:
    """Paragraphs in order, each table as HTML at its place (for the table-aware chunker), Title and Heading styles
    as Markdown headings, and each page after its page marker when the file breaks pages: Word's rendered page
    breaks when it has them (Word saves where its last layout broke pages), else the hard page breaks."""
    docx = _office_library("docx", path)
    from html import escape

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises zipfile/KeyError/ValueError on damaged files
        raise InputError(f"{path}: not a readable .docx ({type(exc).__name__}: {exc})") from None
    rendered = bool(document.element.body.xpath(".//w:lastRenderedPageBreak"))
    titled = any(_style_name(p) == "Title" for p in document.paragraphs)  # then Heading 1 is a level below it
    pages: list[list[str]] = [[]]  # the blocks of each page
    for block in document.iter_inner_content():
        if isinstance(block, docx.table.Table):
            rows = "".join("<tr>" + "".join(f"<td>{escape(cell.text.strip())}</td>" for cell in row.cells) + "</tr>"
                           for row in block.rows)
            pages[-1].append(f"<table>{rows}</table>")
            continue
        level = _docx_heading_level(_style_name(block), titled)
        for i, piece in enumerate(_docx_pages(block, rendered)):
            if i:
                pages.append([])
            if piece.strip():
                pages[-1].append(markdown_heading(level, piece).strip() if level else piece.strip())
    texts = ["\n\n".join(blocks) for blocks in pages]
    return join_pages(texts) if len(texts) > 1 else texts[0]


def _docx_pages(paragraph, rendered: bool) -> list[str]:
    """The paragraph's text cut where a new page starts (one piece when none does)."""
    breaks = ".//w:lastRenderedPageBreak" if rendered else './/w:br[@w:type="page"]'
    if not paragraph._p.xpath(breaks):
        return [paragraph.text]
    pieces, current = [], []
    for node in paragraph._p.iter():
        tag = node.tag.rsplit("}", 1)[-1]
        if tag == "t" and node.text:
            current.append(node.text)
        elif tag == "tab":
            current.append("\t")
        elif (tag == "lastRenderedPageBreak" and rendered) or (
                tag == "br" and not rendered and node.get(_W_TYPE) == "page"):
            pieces.append("".join(current))
            current = []
        elif tag in ("br", "cr"):
            current.append("\n")
    return pieces + ["".join(current)]


_W_TYPE = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}type"


def _style_name(paragraph) -> str:
    return getattr(getattr(paragraph, "style", None), "name", None) or ""


def _docx_heading_level(style: str, titled: bool) -> int:
    """1-6 for Word's "Title" and "Heading N" paragraph styles (N + 1 in a document with a Title), else 0."""
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return min(int(match.group(1)) + titled, 6) if match else 0


def read_document(path: Path, notes: list[str] | None = None) -> str:
    """The text of one supported file; :class:`InputError` for an unsupported type or invalid UTF-8. What was read
    only in part (a damaged PDF page) is said in ``notes``."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InputError(f"{path}: unsupported file type {suffix or '(none)'!r}; supported: "
                         f"{' '.join(SUPPORTED_SUFFIXES)} (convert other formats to text first)")
    if suffix in OFFICE_SUFFIXES:
        return pdf_text(path, notes) if suffix == ".pdf" else docx_text(path)
    data = path.read_bytes()
    if b"\x00" in data[:BINARY_SNIFF_BYTES] and not data.startswith(UTF16_BOMS):  # UTF-16 text has NULs too
        raise InputError(f"{path}: binary file, not {suffix} text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        encoding = guess_encoding(data)
        converted = path.with_suffix(".utf8" + suffix)
        raise InputError(f"{path}: not valid UTF-8 at byte {exc.start} ({exc.reason}); it looks like {encoding}: "
                         f"convert it first, e.g. iconv -f {encoding} -t utf-8 {path} > {converted}") from None
    return html_to_text(text) if suffix in HTML_SUFFIXES else text


# Encodings users' files are really in, most common first: among charset-normalizer's candidates (which ranks German
# Windows-1252 text as Mac Icelandic) the first of these wins.
COMMON_ENCODINGS = ("utf_16", "utf_32", "cp1252", "latin_1", "iso8859_15", "cp1250", "cp1251", "koi8_r", "cp932",
                    "shift_jis", "euc_jp", "gb18030", "big5", "euc_kr", "iso8859_2", "iso8859_5")


def guess_encoding(data: bytes) -> str:
    """The most likely encoding of bytes that are not UTF-8, as iconv names it."""
    from charset_normalizer import from_bytes

    candidates = [match.encoding for match in from_bytes(data[:65536])] or ["cp1252"]
    name = min(candidates, key=lambda c: COMMON_ENCODINGS.index(c) if c in COMMON_ENCODINGS else len(COMMON_ENCODINGS))
    return name.upper().replace("_", "-").replace("LATIN-1", "LATIN1")


def collect_documents(paths: list[str]) -> Collected:
    """The documents with text under ``paths`` (files, folders recursively), read once; every file that cannot be
    indexed (unsupported type, binary, not UTF-8, unreadable, no text) in ``refused`` with its reason. Only a path
    that does not exist raises: that is a mistyped argument, not a file to skip."""
    collected = Collected()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"No such file or directory: {raw}")
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            _add(collected, file)
    return collected


def _add(collected: Collected, file: Path) -> None:
    try:
        text = read_document(file, collected.partial)
    except InputError as exc:
        collected.refused.append(str(exc))
        return
    except OSError as exc:  # permissions, a file that vanished, a device
        collected.refused.append(f"{file}: unreadable ({exc.strerror or type(exc).__name__})")
        return
    if text.strip():
        collected.documents.append((file, text))
    else:  # said, not dropped in silence: a folder of scanned PDFs would otherwise index as "0 file(s)"
        collected.refused.append(f"{file}: {_no_text_reason(file)}")


def _no_text_reason(file: Path) -> str:
    suffix = file.suffix.lower()
    if suffix == ".pdf":
        return "no text layer (a scanned PDF needs OCR first, e.g. ocrmypdf)"
    if suffix in HTML_SUFFIXES:
        return "no text outside scripts, styles and markup"
    return "no text (empty file)"


SOURCE_SEPARATOR = "__"


def source_names(files: list[Path]) -> list[str]:
    """The name each file is indexed under: its file name, or, when several share it, its path from their
    deepest common folder with ``/`` written as ``__``."""
    by_name: dict[str, list[Path]] = {}
    for file in files:
        by_name.setdefault(file.name, []).append(file.resolve())
    names = {}
    for name, same in by_name.items():
        if len(same) == 1:
            names[same[0]] = name
            continue
        parts = [f.parts for f in same]
        common = 0
        while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
            common += 1
        for file, part in zip(same, parts):
            names[file] = SOURCE_SEPARATOR.join(part[common:])
    return [names[file.resolve()] for file in files]
