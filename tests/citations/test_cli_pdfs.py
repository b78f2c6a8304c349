"""`lightrag-prism index` on a folder of PDFs, good and bad, then `query`: each bad one named with what to do, the
rest indexed, each passage printed as `file p. N–M § Section`."""

from __future__ import annotations

import re

from lightrag_prism.cli import EXIT_PARTIAL, main
from tests.citations.corpus import make_bad_pdfs, make_manual
from tests.foundation.test_cli import endpoint_env  # noqa: F401  (fixture)


def test_a_folder_of_good_and_bad_pdfs(capsys, tmp_path, endpoint_env, monkeypatch):  # noqa: F811
    # LightRAG keeps a workspace's data in process-wide dicts whatever the working dir: a workspace of its own keeps
    # these documents out of the other command-line tests of this process
    monkeypatch.setenv("WORKSPACE", f"cli_pdfs_{tmp_path.name}")
    docs = tmp_path / "docs"
    make_bad_pdfs(docs)
    make_manual(docs / "manual.pdf")
    work = str(tmp_path / "w")
    assert main(["index", str(docs), "--working-dir", work, "--quiet"]) == EXIT_PARTIAL
    out = capsys.readouterr()
    assert "Indexed 3 file(s)" in out.out  # the manual, the damaged one (11 of 12 pages) and the permissions-only one
    err = out.err.splitlines()
    assert f"skipped {docs / 'scanned.pdf'}: no text layer (a scanned PDF needs OCR first, e.g. ocrmypdf)" in err
    assert any(line.startswith(f"skipped {docs / 'locked.pdf'}: the PDF is encrypted with a password; decrypt it")
               for line in err), err
    assert any(line.startswith(f"partly read {docs / 'damaged.pdf'}: page 3 could not be read (") and
               line.endswith("the other pages are indexed") for line in err), err
    assert "2 file(s) skipped, 1 read in part (listed above); the others are indexed" in out.err
    assert "Traceback" not in out.err

    assert main(["query", "How often is valve V06-07 inspected?", "--mode", "naive", "--working-dir", work]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if re.match(r" ?\d+\. ", line)]
    assert heads, "no passage printed"
    for head in heads:
        label = re.match(r" ?\d+\. (.+?)(  score|$)", head).group(1)
        assert re.fullmatch(r"(manual|damaged|permissions)\.pdf p\. \d+(–\d+)?( § .+)?", label), head
    assert any(" § Chapter " in head for head in heads)


def test_a_500_page_pdf_is_read_page_by_page_with_nothing_lost(tmp_path):
    from lightrag_prism.citations.layout import Layout
    from lightrag_prism.inputs import pdf_text
    from tests.citations.corpus import LINES_PER_PAGE, sentence

    text = pdf_text(make_manual(tmp_path / "big.pdf", pages=500))
    layout = Layout.parse(text)
    assert layout.page_numbers == list(range(1, 501))
    for page in (0, 249, 499):  # every line of a page is on that page
        for line in (0, LINES_PER_PAGE - 1):
            at = layout.text.index(sentence(page, line))
            assert layout.citation(at, at + 10).pages == (page + 1, page + 1)
