"""A software-manual benchmark: the PostgreSQL 15 manual's server-administration chapters as passages.

The manual is Debian's ``postgresql-doc-15`` package (HTML, PostgreSQL licence), read where it installs
(``/usr/share/doc/postgresql-doc-15/html``); nothing of it is shipped here, only the questions
(``data/pgdocs/questions.json``), which name their passages by page and anchor.

One passage per section or per entry of a definition list (a configuration parameter, a command-line option): the
heading or the entry's term, then its own text (nested sections and entries are passages of their own). Text of 300
to 1,500 characters; a longer one is cut at sentence ends into parts (``ANCHOR~2``, ``~3``, ...), a shorter one
left out. Passage ids are ``page.html#ANCHOR``, stable across the package's 15.x updates.

The questions were written by reading both passages: the question points to passage A, A names a bridge (a
parameter, a command, a view, a file) and the answer is in B, which shares few words with the question.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from pathlib import Path

from .datasets import DATA_ROOT, Dataset, Passage, Question

HTML_DIR = Path("/usr/share/doc/postgresql-doc-15/html")
QUESTIONS = DATA_ROOT / "pgdocs" / "questions.json"
INSTALL_HINT = "the PostgreSQL manual is Debian's postgresql-doc-15 package: apt-get install postgresql-doc-15"
# the chapters a database administrator reads: configuration, authentication, backup and replication, maintenance,
# monitoring, and the client and server programs
PAGE_PREFIXES = ("runtime-config", "auth-", "client-authentication", "continuous-archiving", "warm-standby",
                 "hot-standby", "high-availability", "wal-", "routine-", "monitoring", "logical-replication",
                 "backup", "kernel-resources", "server-", "storage-", "disk-", "app-", "upgrading", "ssl-tcp",
                 "encryption-options", "predefined-roles", "role-", "database-roles", "manage-ag")
SECTION_CLASSES = ["sect1", "sect2", "sect3", "sect4", "refsect1", "refsect2"]
MIN_CHARS, MAX_CHARS = 300, 1500
SECTION_NUMBER = re.compile(r"^(?:[A-Z]?\d+(?:\.\d+)*\.?\s+)")


def normalized(text: str) -> str:
    """One space between words, none inside brackets or before punctuation (``get_text(" ")`` puts one around every
    inline tag: "( 128MB )", "see wal_sync_method .")."""
    text = " ".join(text.split())
    return re.sub(r"([(\[]) | (?=[.,;:)\]])", r"\1", text)


def parts(text: str, limit: int = MAX_CHARS) -> list[str]:
    """``text`` cut at sentence ends into pieces of at most ``limit`` characters (a longer sentence is cut)."""
    pieces, current = [], ""
    for sentence in re.split(r"(?<=[.!?:])\s+", text):
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    return [piece[:limit] for piece in pieces + [current] if piece]


def _passages(anchor: str, title: str, text: str) -> list[Passage]:
    kept = [p for p in parts(text) if len(p) >= MIN_CHARS]
    return [Passage(anchor if i == 0 else f"{anchor}~{i + 1}", title, piece) for i, piece in enumerate(kept)]


def page_passages(path: Path) -> list[Passage]:
    """The passages of one HTML page of the manual: its definition-list entries, then its sections' own text."""
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "lxml")
    passages = []
    for term in soup.select("div.variablelist dt[id]"):
        definition = term.find_next_sibling("dd")
        text = normalized(definition.get_text(" ")) if definition else ""
        if len(text) >= MIN_CHARS:
            passages += _passages(f"{path.name}#{term['id']}", normalized(term.get_text(" ")), text)
            definition.decompose()
            term.decompose()
    for toc in soup.select("div.toc"):  # a chapter's list of its sections: headings, not text
        toc.decompose()
    for section in soup.find_all("div", class_=SECTION_CLASSES, id=True):
        own = copy.copy(section)
        for nested in own.find_all("div", class_=SECTION_CLASSES):
            nested.decompose()
        heading = own.find(["h1", "h2", "h3", "h4", "h5"])
        title = SECTION_NUMBER.sub("", normalized(heading.get_text(" "))) if heading else section["id"]
        if heading:
            heading.decompose()
        passages += _passages(f"{path.name}#{section['id']}", title, normalized(own.get_text(" ")))
    return passages


def manual_passages(html_dir: Path = HTML_DIR) -> list[Passage]:
    """Every passage of the chosen chapters, pages in name order."""
    if not html_dir.is_dir():
        raise FileNotFoundError(f"{html_dir} not found: {INSTALL_HINT}")
    pages = sorted(p for p in html_dir.glob("*.html") if p.name.startswith(PAGE_PREFIXES))
    passages = [passage for page in pages for passage in page_passages(page)]
    unique = {p.id: p for p in passages}
    return list(unique.values())


def load_pgdocs(html_dir: str | Path | None = None) -> Dataset:
    """The manual's passages and the shipped two-hop questions (every gold passage must exist)."""
    passages = manual_passages(Path(html_dir) if html_dir else HTML_DIR)
    ids = {p.id for p in passages}
    rows = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = [Question(id=row["id"], text=row["question"], gold_passage_ids=tuple(row["gold"]),
                          answer=row["answer"], metadata={"bridge": row.get("bridge", "")}) for row in rows]
    missing = sorted({g for q in questions for g in q.gold_passage_ids} - ids)
    if missing:
        raise ValueError(f"gold passages not in this copy of the manual (another postgresql-doc-15 version?): "
                         f"{missing[:5]}")
    return Dataset("pgdocs", passages, questions)
