"""`lightrag-prism serve` installs nothing at start: with pip pointed at an unreachable index and no `ollama`
package (LightRAG Server's default binding pip-installs it through pipmaster), the server becomes healthy and its
log names the embedder really in use and its dimension."""

from __future__ import annotations

import httpx

from tests.server.support import running_server, server_env, server_log


def test_the_server_starts_offline_without_ollama_and_names_its_embedder(scripted_server, tmp_path):
    stub = tmp_path / "no_ollama"
    stub.mkdir()
    # on PYTHONPATH, ahead of site-packages: `import ollama` fails as if the package were not installed
    (stub / "ollama.py").write_text("raise ModuleNotFoundError(\"No module named 'ollama'\", name='ollama')\n")
    (tmp_path / "empty_wheels").mkdir()
    env = server_env(scripted_server, llm=False)
    env.update(PYTHONPATH=str(stub), PIP_INDEX_URL="http://127.0.0.1:9/simple",
               PIP_FIND_LINKS=str(tmp_path / "empty_wheels"), PIP_DEFAULT_TIMEOUT="1", PIP_RETRIES="0")
    with running_server(tmp_path, env) as base:
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
        log = server_log(tmp_path)
        assert f"embedder hashed, {scripted_server.dim}-d" in log, log
        assert "Installing" not in log and "No module named 'ollama'" not in log, log
