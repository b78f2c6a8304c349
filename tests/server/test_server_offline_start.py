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


def test_the_server_keeps_its_files_under_the_working_dir_and_health_names_the_real_bindings(scripted_server,
                                                                                               tmp_path):
    """Started from ``tmp_path`` without ``--input-dir``: the uploads folder and lightrag.log go under the working
    dir, not the current directory; /health names the embedder and LLM that run, not LightRAG's defaults."""
    env = server_env(scripted_server, llm=False)
    with running_server(tmp_path, env, inputs=False) as base:
        health = httpx.get(f"{base}/health", timeout=10).json()
    config = health["configuration"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "server.log"]
    assert (tmp_path / "index" / "inputs").is_dir() and (tmp_path / "index" / "lightrag.log").is_file()
    assert health["input_directory"] == str(tmp_path.resolve() / "index" / "inputs")
    assert config["embedding_binding"] == "openai-compatible (lightrag_prism)"
    assert config["embedding_binding_host"] == scripted_server.base_url
    assert config["embedding_model"] == "hashed"
    assert config["llm_binding"] == "none (lightrag_prism offline)" and config["llm_binding_host"] is None


def test_health_names_the_local_embedder_and_the_configured_llm(monkeypatch):
    from argparse import Namespace

    from lightrag_prism.server import report_plugin_bindings

    monkeypatch.delenv("PRISM_EMBEDDING_MODEL", raising=False)
    monkeypatch.setenv("PRISM_LLM_MODEL", "qwen2.5")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    args = Namespace(llm_binding="openai", llm_binding_host="https://api.openai.com/v1", embedding_binding="openai",
                     embedding_binding_host="http://localhost:11434")
    report_plugin_bindings(args, use_server_llm=False, embedding_func=object())
    assert (args.llm_binding, args.llm_binding_host) == ("openai-compatible (lightrag_prism)",
                                                          "http://127.0.0.1:11434/v1")
    assert (args.embedding_binding, args.embedding_binding_host) == ("local (lightrag_prism)", None)
    kept = Namespace(**vars(args))
    report_plugin_bindings(args, use_server_llm=True, embedding_func=None)  # LightRAG Server's own bindings: as set
    assert args == kept
