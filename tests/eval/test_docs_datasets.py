"""The two benchmarks of users' own documents: the PostgreSQL manual (pgdocs) and a small company's notes."""

from pathlib import Path

import pytest

from lightrag_prism.eval import pgdocs
from lightrag_prism.eval.notes import NOTES_DIR, load_notes

PAGE = """<html><body><div class="chapter" id="CH">
<div class="toc"><dl><dt>19.1. Setting Parameters</dt></dl></div>
<div class="sect1" id="SECT-A"><h2 class="title">19.4. Resource Consumption</h2>
<p>{long_text}</p>
<div class="variablelist"><dl>
<dt id="GUC-WORK-MEM"><span class="term"><code>work_mem</code> (integer)</span></dt>
<dd><p>{entry_text} See <a href="other.html#GUC-X">x</a>.</p></dd>
<dt id="GUC-SHORT"><span class="term">short</span></dt><dd><p>Too short to be a passage.</p></dd>
</dl></div>
<div class="sect2" id="SECT-B"><h3 class="title">19.4.1. Memory</h3><p>{part_text}</p></div>
</div></div></body></html>"""


def test_a_manual_page_becomes_one_passage_per_section_and_entry(tmp_path):
    sentence = "The server keeps this much memory for sorting before it writes to temporary files. "
    page = tmp_path / "runtime-config-resource.html"
    page.write_text(PAGE.format(long_text=sentence * 5, entry_text=sentence * 4, part_text=sentence * 30))
    passages = {p.id: p for p in pgdocs.page_passages(page)}
    entry = passages["runtime-config-resource.html#GUC-WORK-MEM"]
    assert entry.title == "work_mem (integer)" and entry.text.startswith("The server keeps") and "See x." in entry.text
    section = passages["runtime-config-resource.html#SECT-A"]
    # its own text only: no heading number, no table of contents, no entry or nested section
    assert section.title == "Resource Consumption" and "work_mem" not in section.text
    assert "Setting Parameters" not in section.text and "Too short" in section.text
    parts = sorted(pid for pid in passages if pid.startswith("runtime-config-resource.html#SECT-B"))
    assert parts == ["runtime-config-resource.html#SECT-B", "runtime-config-resource.html#SECT-B~2"]
    assert all(pgdocs.MIN_CHARS <= len(p.text) <= pgdocs.MAX_CHARS for p in passages.values())
    assert passages["runtime-config-resource.html#SECT-B"].title == "Memory"
    assert "runtime-config-resource.html#GUC-SHORT" not in passages  # under 300 characters


def test_the_manual_passages_hold_every_gold_passage_of_the_questions():
    assert pgdocs.HTML_DIR.is_dir(), pgdocs.INSTALL_HINT
    dataset = pgdocs.load_pgdocs()
    assert len(dataset.passages) >= 800 and len(dataset.questions) >= 50
    by_id = dataset.passage_by_id
    for question in dataset.questions:
        first, second = question.gold_passage_ids
        assert first != second and first in by_id and second in by_id, question.id
    assert len({p.id for p in dataset.passages}) == len(dataset.passages)
    assert all(300 <= len(p.text) <= 1500 for p in dataset.passages)


def test_a_missing_manual_names_the_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install postgresql-doc-15"):
        pgdocs.manual_passages(tmp_path / "nowhere")


def test_the_notes_are_indexed_as_their_files_and_every_question_needs_two():
    dataset = load_notes()
    files = sorted((NOTES_DIR / "files").iterdir())
    assert len(files) >= 20 and len(dataset.questions) >= 30
    texts = {p.id: p.content for p in dataset.passages}
    assert texts == {f.name: f.read_text(encoding="utf-8").strip() for f in files}
    for question in dataset.questions:
        assert len(set(question.gold_passage_ids)) == 2 and set(question.gold_passage_ids) <= set(texts), question.id
    # a subset of the questions keeps the whole corpus (no candidate paragraphs to restrict it to)
    assert len(dataset.subset(3).passages) == len(dataset.passages)


def test_both_benchmarks_are_datasets_of_the_bench():
    from lightrag_prism.eval.bench import LOADERS

    assert {"pgdocs", "notes"} <= set(LOADERS)
    assert Path(pgdocs.QUESTIONS).is_file()
