"""Real PDF, DOCX and Markdown files for the citation tests, made with reportlab and python-docx (dev extra).

``manual.pdf`` has 12 pages of distinct sentences, chapters and sections drawn on the page where they start and
listed in its outline (bookmarks); ``handbook.docx`` has Title/Heading styles, hard page breaks and a table;
``notes.md`` has nested headings and a code fence holding a ``#`` line. The bad ones: a scanned PDF (no text
layer), a password-encrypted one, one encrypted for permissions only (opens without a password), one with a
damaged page.
"""

from __future__ import annotations

from pathlib import Path

PAGES = 12
LINES_PER_PAGE = 30


def outline(pages: int) -> list[tuple[int, int, str]]:
    """(page, level, title): a chapter every 4 pages, a section in the middle of each chapter."""
    return [(p, 1, f"Chapter {p // 4 + 1} Pumps of line {p // 4 + 1}") if p % 4 == 0 else
            (p, 2, f"Section {p // 4 + 1}.{p % 4} Valves of bay {p}") for p in range(0, pages, 2)]


def sentence(page: int, line: int) -> str:
    return f"Valve V{page + 1:02d}-{line:02d} on page {page + 1} is inspected every {line + 3} days by crew {page}."


def make_manual(path: Path, damaged_page: int | None = None, pages: int = PAGES) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    titles = {page: (level, title) for page, level, title in outline(pages)}
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for page in range(pages):
        y = 800
        if page in titles:
            level, title = titles[page]
            pdf.setFont("Helvetica-Bold", 14)
            pdf.drawString(72, y, title)
            pdf.bookmarkPage(f"p{page}")
            pdf.addOutlineEntry(title, f"p{page}", level=level - 1)
            pdf.setFont("Helvetica", 10)
            y -= 24
        for line in range(LINES_PER_PAGE):
            pdf.drawString(72, y, sentence(page, line))
            y -= 22
        pdf.showPage()
    pdf.save()
    if damaged_page is not None:
        _damage(path, damaged_page)
    return path


def _damage(path: Path, page_index: int) -> None:
    """Replace one page's content stream by bytes that are not the Flate data its filter says."""
    import pypdf
    from pypdf.generic import NameObject, StreamObject

    writer = pypdf.PdfWriter(clone_from=str(path))
    stream = StreamObject()
    stream._data = b"\x00 not deflate data"
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    writer.pages[page_index][NameObject("/Contents")] = writer._add_object(stream)
    writer.write(str(path))


def make_scanned(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    pdf.rect(72, 400, 300, 200, fill=1)  # a picture of a page, no text layer
    pdf.showPage()
    pdf.save()
    return path


def make_encrypted(path: Path, user_password: str) -> Path:
    from reportlab.lib import pdfencrypt
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), encrypt=pdfencrypt.StandardEncryption(user_password, ownerPassword="owner"))
    pdf.drawString(72, 800, "The pump manifest lists seven pumps for line four.")
    pdf.showPage()
    pdf.save()
    return path


def make_handbook(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Crew Handbook", level=0)
    document.add_heading("Shifts", level=1)
    document.add_paragraph("The night shift starts at 22:00 and is led by Mara Quist.")
    document.add_paragraph("Shift changes are logged in the harbour ledger.")
    document.add_page_break()
    document.add_heading("Safety", level=1)
    document.add_paragraph("Every crew member wears a yellow vest on the quay.")
    document.add_heading("Drills", level=2)
    document.add_paragraph("Fire drills happen on the first Monday of each month.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate((("Drill", "Month"), ("Fire", "Every"))):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_page_break()
    document.add_heading("Contacts", level=1)
    document.add_paragraph("The harbour master is Olle Brandt, reachable on channel 12.")
    document.save(str(path))
    return path


NOTES = """# Port Wenna

Port Wenna is a harbour town on the west coast.

## History

The harbour was dredged in 1902 by the Wenna Dock Company.

```bash
# not a heading: a comment in a code block
make harbour
```

### Lighthouse

The lighthouse was built in 1911 and still works.

## Trade

Fish and timber leave the harbour every week.
"""


def make_notes(path: Path) -> Path:
    path.write_text(NOTES, encoding="utf-8")
    return path


def make_corpus(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {"manual": make_manual(folder / "manual.pdf"), "handbook": make_handbook(folder / "handbook.docx"),
            "notes": make_notes(folder / "notes.md")}


def make_bad_pdfs(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {"scanned": make_scanned(folder / "scanned.pdf"), "locked": make_encrypted(folder / "locked.pdf", "s3cret"),
            "permissions": make_encrypted(folder / "permissions.pdf", ""),
            "damaged": make_manual(folder / "damaged.pdf", damaged_page=2)}
