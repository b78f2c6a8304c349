"""LightRAG's warnings that are expected in plugin modes are not emitted; the rerank warning is said once."""

from __future__ import annotations

import logging

import pytest

from lightrag_prism import QueryParam
from lightrag_prism.quiet_logs import QuietLightRAG
from tests.retrievers._kg import make_rag


def lightrag_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lightrag" and r.levelno >= logging.WARNING]


@pytest.mark.asyncio
async def test_prism_queries_do_not_warn_about_their_own_chunk_handling(tmp_path, caplog):
    rag = await make_rag(tmp_path)
    try:
        with caplog.at_level(logging.WARNING, logger="lightrag"):
            for _ in range(2):
                result = await rag.aquery_data("Who founded Acme?", QueryParam(mode="prism"))
                assert result["status"] == "success"
        said = lightrag_warnings(caplog)
        assert not [m for m in said if m.startswith(("No entities with text chunks", "No relation-related chunks"))]
        assert sum(m.startswith("Rerank is enabled") for m in said) <= 1
    finally:
        await rag.finalize_storages()


def test_the_filter_keeps_the_same_warnings_outside_plugin_modes():
    quiet = QuietLightRAG()

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("lightrag", logging.WARNING, __file__, 1, message, None, None)

    assert quiet.filter(record("No entities with text chunks found"))  # no plugin mode running
    assert quiet.filter(record("Rerank is enabled but no rerank model is configured. ..."))
    assert not quiet.filter(record("Rerank is enabled but no rerank model is configured. ..."))
    assert quiet.filter(record("Something else"))


def _log_lines(code: str, **env: str) -> str:
    import os
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**{k: v for k, v in os.environ.items() if k != "LOG_LEVEL"}, **env})
    assert run.returncode == 0, run.stderr
    return run.stderr


EMIT = ("import logging; logging.getLogger('lightrag').info('lightrag-info'); "
        "logging.getLogger('nano-vectordb').info('nano-info'); logging.getLogger('lightrag').warning('lightrag-warn')")


def test_lightrag_info_logs_are_off_by_default_in_python():
    err = _log_lines("import lightrag_prism; " + EMIT)
    assert "lightrag-info" not in err and "nano-info" not in err and "lightrag-warn" in err


def test_an_application_that_configured_logging_keeps_its_levels():
    err = _log_lines("import logging; logging.basicConfig(level=logging.INFO); import lightrag_prism; " + EMIT)
    assert "lightrag-info" in err and "nano-info" in err
    assert "lightrag-info" in _log_lines("import lightrag_prism; " + EMIT, LOG_LEVEL="INFO")
