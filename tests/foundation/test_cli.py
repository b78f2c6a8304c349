"""The lightrag-prism command: helpful errors, offline index + query, and the end-to-end demo."""

from __future__ import annotations

import json

import pytest

from lightrag_prism.cli import main


@pytest.fixture
def endpoint_env(monkeypatch, scripted_server):
    """Embeddings from the scripted server; no LLM configured."""
    monkeypatch.setenv("PRISM_EMBEDDING_MODEL", "scripted-embed")
    monkeypatch.setenv("PRISM_EMBEDDING_DIM", "64")
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.delenv("PRISM_LLM_MODEL", raising=False)
    return scripted_server


def test_index_reports_a_missing_path(capsys, tmp_path):
    assert main(["index", str(tmp_path / "nope.txt"), "--working-dir", str(tmp_path / "w")]) == 2
    assert "No such file or directory" in capsys.readouterr().err


def test_index_reports_empty_input(capsys, tmp_path):
    (tmp_path / "empty.txt").write_text("   \n")
    assert main(["index", str(tmp_path), "--working-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "empty.txt: no text (empty file)" in err and "Nothing to index" in err


def test_query_reports_a_missing_working_dir(capsys, tmp_path):
    assert main(["query", "Who is Alice?", "--working-dir", str(tmp_path / "missing")]) == 2
    assert "run `lightrag-prism index" in capsys.readouterr().err


def test_query_names_a_knob_of_the_wrong_type(capsys, tmp_path, endpoint_env):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "varga.txt").write_text("Ilona Varga trains falcons in Eger.")
    work = str(tmp_path / "w")
    assert main(["index", str(docs), "--working-dir", work, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["query", "Where does Ilona Varga train falcons?", "--working-dir", work, "top_k=abc"]) == 2
    err = capsys.readouterr().err
    assert "top_k must be a non-negative integer, got 'abc'" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["demo", "bench"])
@pytest.mark.parametrize("count, says", [("0", "must be at least 1, got 0"), ("few", "expected a whole number")])
def test_a_question_count_below_one_is_refused_before_any_work(capsys, tmp_path, command, count, says):
    with pytest.raises(SystemExit) as done:  # 0 was falsy, so it ran every question of the dataset
        main([command, "--questions", count, "--working-dir", str(tmp_path / "w"), "--out", str(tmp_path / "o")])
    assert done.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_query_rejects_an_unknown_mode(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["query", "Who is Alice?", "--mode", "nope"])
    assert "invalid choice" in capsys.readouterr().err


def test_index_then_query_offline(capsys, tmp_path, endpoint_env):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Alice Smith works at Acme Corp in Paris. Bob Jones knows Alice Smith.")
    (docs / "b.md").write_text("Acme Corp was founded by Carol White in Berlin.")
    work = str(tmp_path / "w")
    assert main(["index", str(docs), "--working-dir", work]) == 0
    out = capsys.readouterr()
    assert "No LLM configured" in out.err and "Indexed 2 file(s)" in out.out
    assert main(["query", "Where does Alice Smith work?", "--mode", "hybrid", "--working-dir", work, "--json"]) == 0
    out = capsys.readouterr()
    assert out.err.strip().splitlines() == ["No LLM configured (set PRISM_LLM_MODEL, and OPENAI_BASE_URL for a "
                                            "local server): retrieval only"]
    data = json.loads(out.out)
    assert data["status"] == "success"
    assert any(e["entity_name"] == "Alice Smith" for e in data["data"]["entities"])
    assert main(["query", "Where does Alice Smith work?", "--working-dir", work]) == 0  # prism, the default
    lines = capsys.readouterr().out.splitlines()  # readable: a legend, rank, source, score, what found it, an excerpt
    assert lines[0].startswith("[prism] best first; score: "), lines
    assert lines[1].startswith(" 1. a.txt  score ") and "found by: " in lines[1], lines
    assert lines[2].startswith("    Alice Smith works at Acme Corp"), lines
    assert len(lines) < 40


def test_demo_end_to_end_with_the_local_embedder(capsys, tmp_path):
    """The README's main job on one question, with the real all-MiniLM-L6-v2 model, offline."""
    out_dir = tmp_path / "out"
    assert main(["demo", "--questions", "1", "--working-dir", str(tmp_path / "w"), "--out", str(out_dir),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Q1:" in printed and "| naive |" in printed
    assert "\u2713 = a gold passage" in printed and "    expected answer: " in printed  # the output's legend
    report = json.loads((out_dir / "results.json").read_text())
    assert report["questions"] == 1 and report["passages"] == 20
    from lightrag_prism.eval.bench import default_modes

    assert list(report["modes"]) == default_modes()
    assert report["modes"]["naive"]["recall"]["10"] > 0
    assert (out_dir / "results.png").stat().st_size > 0


# --- one-line errors, input types, options (issue 13) ---------------------------------------------------------

def test_html_becomes_text_with_its_tables_kept_as_html():
    from lightrag_prism.inputs import html_to_text

    text = html_to_text("<html><head><style>p{}</style><title>t</title></head><body><h1>Report</h1>"
                        "<p>Sales grew.</p><table><tr><th>Year</th></tr><tr><td>2024</td></tr></table>"
                        "<script>alert(1)</script></body></html>")
    assert "Report" in text and "Sales grew." in text
    assert "<table>" in text and "<td>2024</td>" in text
    assert "<p>" not in text and "alert" not in text and "</body>" not in text


def test_html_and_docx_headings_become_markdown_headings(tmp_path):
    """Headings stay structure on their way to the extractor, which reads "# ..." as a title or a section."""
    import docx

    from lightrag_prism.inputs import docx_text, html_to_text

    assert html_to_text("<h1>Acme <i>Robotics</i></h1><p>Acme builds robots.</p><h3>History</h3><p>Since 2011.</p>"
                        ) == "# Acme Robotics\n\nAcme builds robots.\n\n### History\n\nSince 2011."
    document = docx.Document()
    document.add_heading("Acme Robotics", level=0)  # Word's "Title" style
    document.add_heading("History", level=1)  # a level below the Title
    document.add_paragraph("Founded in 2011 by Ines Vale.")
    document.save(tmp_path / "acme.docx")
    assert docx_text(tmp_path / "acme.docx") == "# Acme Robotics\n\n## History\n\nFounded in 2011 by Ines Vale."


def test_invalid_utf8_is_refused_with_file_and_byte_offset(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text \xff\xfe bad")
    assert main(["index", str(bad), "--working-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "bad.txt" in err and "byte 10" in err and "Traceback" not in err


def test_unsupported_types_are_refused_by_name(capsys, tmp_path, endpoint_env):
    (tmp_path / "paper.odt").write_bytes(b"PK\x03\x04")
    assert main(["index", str(tmp_path / "paper.odt"), "--working-dir", str(tmp_path / "w")]) == 2
    assert "paper.odt: unsupported file type '.odt'" in capsys.readouterr().err
    docs = tmp_path / "docs"
    docs.mkdir()
    # a new name: LightRAG keeps one process-wide store per workspace, which earlier tests in this process filled
    (docs / "quayle.txt").write_text("Bertha Quayle works at Zenith Mills in Lyon.")
    (docs / "image.png").write_bytes(b"\x89PNG")
    assert main(["index", str(docs), "--working-dir", str(tmp_path / "w"), "--quiet"]) == 3  # some files skipped
    out = capsys.readouterr()
    assert "skipped" in out.err and "image.png" in out.err and "Indexed 1 file(s)" in out.out


def test_files_without_text_are_reported_as_skipped_and_the_rest_indexed(capsys, tmp_path, endpoint_env):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ilves.txt").write_text("Oskar Ilves repairs clocks in Tartu.")
    (docs / "blank.md").write_text("\n \n")
    (docs / "shell.html").write_text("<html><head><title>t</title></head><body><script>x()</script></body></html>")
    (docs / "scan.pdf").write_bytes(minimal_pdf([]))  # a page without a text layer, as a scanner makes
    assert main(["index", str(docs), "--working-dir", str(tmp_path / "w"), "--quiet"]) == 3
    out = capsys.readouterr()
    skipped = sorted(line for line in out.err.splitlines() if line.startswith("skipped "))
    assert skipped == [f"skipped {docs / 'blank.md'}: no text (empty file)",
                       f"skipped {docs / 'scan.pdf'}: no text layer (a scanned PDF needs OCR first, e.g. ocrmypdf)",
                       f"skipped {docs / 'shell.html'}: no text outside scripts, styles and markup"], out.err
    assert "Indexed 1 file(s)" in out.out


def test_a_folder_with_bad_files_indexes_the_readable_ones_and_names_each_skipped_one(capsys, tmp_path,
                                                                                        endpoint_env, monkeypatch):
    """A binary, an empty, a Latin-1 and an unreadable file beside a good one: the good one is indexed, each other
    file is named with its reason, exit 3 (partly); the same folder without the bad files exits 0."""
    import sys
    from pathlib import Path

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "orvel.md").write_text("Anja Orvel runs the ferry between Kessa and Lunt.")
    (docs / "python.txt").write_bytes(Path(sys.executable).resolve().read_bytes()[:65536])  # a real binary
    (docs / "empty.txt").write_bytes(b"")
    (docs / "latin.txt").write_bytes("Le café de la gare sert une crème brûlée réputée à Orléans.".encode("latin-1"))
    (docs / "locked.txt").write_text("x")
    read_bytes = Path.read_bytes

    def locked(path):  # root reads any file: the refusal a user without the permission gets
        if path.name == "locked.txt":
            raise PermissionError(13, "Permission denied")
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", locked)
    assert main(["index", str(docs), "--working-dir", str(tmp_path / "w"), "--quiet"]) == 3
    out = capsys.readouterr()
    assert "Indexed 1 file(s)" in out.out
    skipped = dict(line.removeprefix("skipped ").split(": ", 1) for line in out.err.splitlines()
                   if line.startswith("skipped "))
    assert sorted(skipped) == sorted(str(docs / n) for n in ("empty.txt", "latin.txt", "locked.txt", "python.txt"))
    assert skipped[str(docs / "python.txt")] == "binary file, not .txt text"
    assert skipped[str(docs / "empty.txt")] == "no text (empty file)"
    assert skipped[str(docs / "locked.txt")] == "unreadable (Permission denied)"
    latin = skipped[str(docs / "latin.txt")]
    assert latin.startswith("not valid UTF-8 at byte 6") and "iconv -f " in latin, latin
    assert "4 file(s) skipped" in out.err
    for name in ("python.txt", "empty.txt", "latin.txt", "locked.txt"):
        (docs / name).unlink()
    assert main(["index", str(docs), "--working-dir", str(tmp_path / "w"), "--quiet"]) == 0
    assert "skipped" not in capsys.readouterr().err


def test_the_encoding_of_a_file_that_is_not_utf8_is_guessed():
    from lightrag_prism.inputs import guess_encoding

    text = "Straße, Größe, Übermaß: die Bäckerei in Köln öffnet um acht Uhr. " * 4
    assert guess_encoding(text.encode("cp1252")) in {"CP1252", "CP1250"}  # the same bytes for these letters
    assert guess_encoding("Le café sert une crème brûlée à Orléans.".encode("latin-1")) == "CP1252"
    assert guess_encoding("Привет, как дела? Это текст на русском языке. ".encode("koi8-r") * 4) == "KOI8-R"


def test_utf16_text_is_not_called_binary(tmp_path):
    from lightrag_prism.inputs import InputError, read_document

    path = tmp_path / "notes.txt"
    path.write_text("Notes from the Kessa ferry office.", encoding="utf-16")
    with pytest.raises(InputError, match="not valid UTF-8") as refused:
        read_document(path)
    assert "UTF-16" in str(refused.value)


def test_serve_without_the_api_extra_is_one_line_with_the_command_that_installs_it(capsys, monkeypatch, tmp_path):
    import sys

    from lightrag_prism.errors import SOURCE_CHECKOUT

    monkeypatch.setitem(sys.modules, "lightrag.api", None)  # as if FastAPI and LightRAG Server were not installed
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # serve rewrites sys.argv for LightRAG Server's parser
    assert main(["serve", "--working-dir", str(tmp_path / "w")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: lightrag-prism serve needs the api extra"), lines
    # this checkout is installed with pip install -e: the command installs the extra from it, not from PyPI
    assert lines[0].endswith(f"pip install -e '{SOURCE_CHECKOUT}[api]'"), lines


def test_query_output_has_a_legend_and_an_excerpt_around_the_matching_sentence():
    from lightrag_prism.cli import matching_excerpt, ranked_passages

    text = ("Kessa is a fishing town. " * 12 + "The ferry to Lunt is run by Anja Orvel since 2004. "
            + "Its harbour is small. " * 12)
    excerpt = matching_excerpt(text, "Who runs the ferry to Lunt?")
    assert excerpt.startswith("... The ferry to Lunt is run by Anja Orvel") and excerpt.endswith(" ...")
    assert len(excerpt) <= 210
    assert matching_excerpt("Short text.", "ferry") == "Short text."
    tail = matching_excerpt("Kessa is a fishing town. " * 12 + "Anja Orvel runs the ferry.", "Who runs the ferry?")
    assert tail.endswith("Anja Orvel runs the ferry.") and tail.startswith("... ")
    chunks = [{"file_path": "a.md", "content": text, "score": 3.2, "found_by": "dense"},
              {"file_path": "b.md", "content": "Lunt.", "score": 0.016, "found_by": "ppr"}]
    lines = ranked_passages(chunks, "prism", "Who runs the ferry to Lunt?").splitlines()
    assert lines[0] == ("[prism] best first; score: above 1: dense retrieval's top passages, kept first; below 1: "
                        "share of the graph walk (PageRank); found by: dense = vector similarity, ppr = graph walk")
    assert lines[1] == " 1. a.md  score 3.200  found by: dense"
    stock = ranked_passages([{"file_path": "a.md", "content": "Lunt."}], "naive", "q").splitlines()
    assert stock == ["[naive] best first, LightRAG's own order (its modes put no score on a passage)",
                     " 1. a.md", "    Lunt."]


def test_working_dir_errors_say_what_is_wrong(capsys, tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    assert main(["query", "q", "--working-dir", str(a_file)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["query", "q", "--working-dir", str(empty)]) == 2
    assert "holds no index" in capsys.readouterr().err


def test_query_options_and_knob_overrides_reach_the_query_param(capsys):
    from lightrag_prism.cli import parse_args, query_param

    args = parse_args(["query", "q", "--mode", "prism", "--top-k", "7", "--chunk-top-k", "3",
                                      "ppr_damping=0.6", "prism_name_linking=False"])
    param = query_param(args)
    assert (param.mode, param.top_k, param.chunk_top_k, param.ppr_damping, param.prism_name_linking) == \
        ("prism", 7, 3, 0.6, False)
    assert main(["query", "q", "no_such_knob=1", "--working-dir", "."]) == 2
    assert "no_such_knob" in capsys.readouterr().err


def test_an_unreachable_llm_endpoint_is_one_line_naming_it(capsys, monkeypatch, tmp_path):
    import httpx
    import openai

    from lightrag_prism import cli

    (tmp_path / "kv_store_doc_status.json").write_text("{}")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PRISM_LLM_MODEL", "m")

    def unreachable(_):
        raise openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))

    monkeypatch.setattr(cli, "make_rag", unreachable)
    assert main(["query", "q", "--working-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9/v1" in err and "PRISM_LLM_MODEL" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 2  # the line, and the hint to use -v
    with pytest.raises(openai.APIConnectionError):
        main(["query", "q", "--working-dir", str(tmp_path), "-v"])


def test_version_and_python_dash_m(capsys):
    import subprocess
    import sys

    from lightrag_prism import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out
    done = subprocess.run([sys.executable, "-m", "lightrag_prism", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout


def test_files_sharing_a_name_are_all_indexed_and_a_name_clash_is_reported(capsys, tmp_path, endpoint_env):
    # LightRAG refuses a second document under a file name it holds: same-named files get distinct names
    for folder, text in (("a", "Quentin Harlow founded the Ostrava Guild in 1902."),
                         ("b", "Mirela Voss painted the Ostrava Guild hall in 1911.")):
        (tmp_path / "docs" / folder).mkdir(parents=True)
        (tmp_path / "docs" / folder / "notes.txt").write_text(text)
    work = str(tmp_path / "w")
    assert main(["index", str(tmp_path / "docs"), "--working-dir", work, "--quiet"]) == 0
    assert "Indexed 2 file(s)" in capsys.readouterr().out
    assert main(["index", str(tmp_path / "docs" / "a"), "--working-dir", work, "--quiet"]) == 0
    assert "already indexed" in capsys.readouterr().out  # the same text again: nothing lost, nothing doubled
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a__notes.txt").write_text("Ilse Brandt opened a bakery in Graz in 1950.")
    assert main(["index", str(tmp_path / "other"), "--working-dir", work, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "a__notes.txt: a different document with this file name is already indexed" in err


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF whose text layer holds ``lines`` (built by hand: no PDF writer is a dependency)."""
    text = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {text} ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_pdf_and_docx_are_read_and_broken_ones_refused_by_name(tmp_path):
    import docx

    from lightrag_prism.inputs import InputError, read_document

    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(minimal_pdf(["Odile Farrant opened a bakery in Lunebourg.", "It closed in 2019."]))
    text = read_document(pdf)
    assert "Odile Farrant opened a bakery in Lunebourg." in text and "It closed in 2019." in text

    document = docx.Document()
    document.add_paragraph("Revenue by year.")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, (("Year", "Revenue"), ("2024", "5 < 7"))):
        for cell, value in zip(row.cells, values):
            cell.text = value
    document.add_paragraph("Figures audited.")
    document.save(tmp_path / "report.docx")
    text = read_document(tmp_path / "report.docx")
    assert text == ("Revenue by year.\n\n<table><tr><td>Year</td><td>Revenue</td></tr><tr><td>2024</td>"
                    "<td>5 &lt; 7</td></tr></table>\n\nFigures audited.")

    for name, data in (("broken.pdf", b"%PDF-1.4 not really"), ("broken.docx", b"PK not a zip")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=name):
            read_document(tmp_path / name)


def test_a_dead_llm_fails_every_mode_the_same_way_in_one_line(capsys, monkeypatch, tmp_path):
    """Nothing listens at the endpoint: in every mode, the default (mix) and the stock ones included, exit 2 with
    one clean line naming the endpoint, within seconds (a refused connection is retried once at most)."""
    import time

    from lightrag_prism import backends
    from lightrag_prism.retrievers import valid_modes
    from tests.helpers import hash_embedding_func
    from tests.server.support import free_port

    monkeypatch.setattr(backends, "default_embedding_func", hash_embedding_func)
    monkeypatch.delenv("PRISM_LLM_MODEL", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "founders.txt").write_text("Alice Smith works at Acme Corp in Paris. Acme Corp was founded by Carol White.")
    work = str(tmp_path / "w")
    assert main(["index", str(docs), "--working-dir", work]) == 0
    capsys.readouterr()
    dead = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("PRISM_LLM_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", dead)
    for mode in [None, *(m for m in valid_modes() if m != "bypass")]:
        started = time.monotonic()
        assert main(["query", "Who founded Acme Corp?", "--working-dir", work,
                     *(["--mode", mode] if mode else [])]) == 2, mode
        seconds = time.monotonic() - started
        out = capsys.readouterr()
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and out.out == "", (mode, out)
        assert dead in lines[0] and "connection refused" in lines[0] and ".." not in lines[0], (mode, lines)
        assert lines[0].endswith("`--context-only` prints the retrieved passages without calling the LLM"), lines
        assert seconds < 5, (mode, seconds)
