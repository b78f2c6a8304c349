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
    assert "Nothing to index" in capsys.readouterr().err


def test_query_reports_a_missing_working_dir(capsys, tmp_path):
    assert main(["query", "Who is Alice?", "--working-dir", str(tmp_path / "missing")]) == 2
    assert "run `lightrag-prism index" in capsys.readouterr().err


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
    assert main(["query", "Where does Alice Smith work?", "--mode", "hybrid", "--working-dir", work]) == 0
    out = capsys.readouterr()
    assert "showing the retrieved context" in out.err
    data = json.loads(out.out)
    assert data["status"] == "success"
    assert any(e["entity_name"] == "Alice Smith" for e in data["data"]["entities"])


def test_demo_end_to_end_with_the_local_embedder(capsys, tmp_path):
    """The README's main job on one question, with the real all-MiniLM-L6-v2 model, offline."""
    out_dir = tmp_path / "out"
    assert main(["demo", "--questions", "1", "--working-dir", str(tmp_path / "w"), "--out", str(out_dir),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Q1:" in printed and "| naive |" in printed
    report = json.loads((out_dir / "results.json").read_text())
    assert report["questions"] == 1 and report["passages"] == 20
    from lightrag_prism.eval.bench import default_modes

    assert list(report["modes"]) == default_modes()
    assert report["modes"]["naive"]["recall"]["10"] > 0
    assert (out_dir / "results.png").stat().st_size > 0
