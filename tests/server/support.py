"""`lightrag-prism serve` as a real process on 127.0.0.1 for the server tests, and small HTTP helpers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

STARTUP_TIMEOUT = 120.0
PROCESS_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(scripted, *, llm: bool, api_key: str | None = None) -> dict[str, str]:
    """Embeddings from the scripted server (cheap, deterministic); its LLM only if ``llm``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRISM_", "LLM_", "EMBEDDING_", "LIGHTRAG_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=scripted.base_url, OPENAI_API_KEY="test", PRISM_EMBEDDING_MODEL="hashed",
               PRISM_EMBEDDING_DIM=str(scripted.dim), HF_HUB_OFFLINE="1")
    if llm:
        env["PRISM_LLM_MODEL"] = "scripted"
    if api_key:
        env["LIGHTRAG_API_KEY"] = api_key
    return env


@contextmanager
def running_server(root: Path, env: dict[str, str], *extra_args: str, inputs: bool = True):
    """Start the server in ``root`` (working dir ``root/index``, inputs ``root/inputs``, or the server's default
    without ``inputs``); yield its base URL."""
    root = Path(root).resolve()
    port = free_port()
    log = open(root / "server.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "lightrag_prism", "serve", "--working-dir", str(root / "index"),
         *(["--input-dir", str(root / "inputs")] if inputs else []),
         "--host", "127.0.0.1", "--port", str(port), *extra_args],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}:\n{server_log(root)}")
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not start in {STARTUP_TIMEOUT} s:\n{server_log(root)}")
            time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def server_log(root: Path) -> str:
    return (root / "server.log").read_text(errors="replace")[-4000:]


def wait_processed(client: httpx.Client, count: int, timeout: float = PROCESS_TIMEOUT) -> dict:
    """Poll the pipeline until ``count`` documents are processed and it is idle (fail fast on a failed one)."""
    deadline = time.monotonic() + timeout
    while True:
        counts = client.get("/documents/status_counts").json()["status_counts"]
        if counts.get("failed"):
            raise AssertionError(f"a document failed: {counts}")
        if counts.get("processed", 0) >= count and not client.get("/documents/pipeline_status").json()["busy"]:
            return counts  # processed, and the pipeline run (flushes, query indexes) over
        if time.monotonic() > deadline:
            raise AssertionError(f"documents not processed in {timeout} s: {counts}")
        time.sleep(0.3)
