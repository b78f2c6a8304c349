"""What processes sharing one set of LightRAG storages coordinate through (docs/scale-out.md).

* The **graph version**: a token kept in the plugin state (record ``graph_version`` of ``prism_state``), replaced
  by whichever process changed the graph (insert, delete, edit, merge, clear) once the change is stored. A token,
  not a counter: the KV API has no atomic increment, and replicas only need to see that it changed.
* :class:`VersionWatcher`: reads that token every ``interval`` seconds and, when another process replaced it,
  rebuilds this process's snapshot and query indexes in the background; queries answer from the previous snapshot
  until the new one is ready (``SnapshotCache.refresh``).
* :func:`shared_lock`: a lock held in the shared storage itself, for read-modify-writes of plugin state and for
  agentic merging: a PostgreSQL advisory lock, a Redis lock, or on file storages LightRAG's keyed lock (across
  the workers of one server in its multi-worker mode; file storages cannot be shared beyond one server).
* :class:`PipelineTurn`: LightRAG's one-pipeline-per-workspace rule (its ``busy`` flag) held in that shared lock,
  so replicas take turns at processing documents instead of resuming each other's documents in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from contextvars import ContextVar
from typing import AsyncIterator, Awaitable, Callable

from . import patches
from .background import stop_task
from .errors import describe_error

logger = logging.getLogger(__name__)

VERSION_DOCUMENT = "graph_version"
PIPELINE_LOCK = "document_pipeline"
DEFAULT_INTERVAL = 0.5  # seconds between two reads of the shared version (one KV read; staleness bound)
PG_KV_CLASS, REDIS_KV_CLASS = "PGKVStorage", "RedisKVStorage"
REFRESH_HISTORY = 1000
LOCK_POLL = 0.05  # seconds between two attempts at a held PostgreSQL lock
REDIS_LEASE = 30.0  # seconds a Redis lock lives without renewal (a crashed holder frees it after this)


def new_token() -> str:
    return f"{time.time_ns()}-{uuid.uuid4().hex[:12]}"


async def read_version(state) -> str:
    return await state.document(VERSION_DOCUMENT).load("")


async def write_version(state) -> str:
    token = new_token()
    await state.document(VERSION_DOCUMENT).save(token)
    return token


class VersionWatcher:
    """Keeps one process's query state in step with writes made by other processes.

    ``state`` is the instance's ``PluginState``; ``seen`` the token its snapshot reflects; ``refresh`` rebuilds
    the snapshot and its views from storage. ``failure`` says why the last check did not complete (None when it
    did); queries record it, so an answer from an older snapshot is never given silently."""

    def __init__(self, state, refresh: Callable[[], Awaitable[None]], interval: float) -> None:
        self.state, self.refresh, self.interval = state, refresh, interval
        self.seen: str | None = None
        self.failure: str | None = None
        self.refreshes = 0
        self.refresh_seconds: list[float] = []  # the last REFRESH_HISTORY reloads (staleness = interval + these)
        self._task: asyncio.Task | None = None
        self._check_lock = asyncio.Lock()

    def start(self) -> None:
        if self.interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll(), name="lightrag_prism version watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await stop_task(task)  # a single cancel() of a Redis read can be lost (background.py)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.check()

    async def check(self) -> bool:
        """Read the shared version; if another process changed it, refresh. True when a refresh ran."""
        async with self._check_lock:
            try:
                token = await read_version(self.state)
            except Exception as exc:  # noqa: BLE001 - a storage outage: keep the last snapshot, say so
                self._failed(f"the shared graph version could not be read ({describe_error(exc)})")
                return False
            if token == self.seen:
                self.failure = None
                return False
            started = time.perf_counter()
            try:
                await self.refresh()
            except Exception as exc:  # noqa: BLE001 - retried at the next check
                self._failed(f"another process changed the graph and this one could not reload it "
                             f"({describe_error(exc)})")
                return False
            self.seen, self.failure = token, None
            self.refreshes += 1
            self.refresh_seconds = [*self.refresh_seconds[-REFRESH_HISTORY + 1:], time.perf_counter() - started]
            return True

    def status(self) -> dict:
        return {"interval_s": self.interval, "refreshes": self.refreshes, "failure": self.failure,
                "refresh_seconds": [round(s, 3) for s in self.refresh_seconds]}

    def _failed(self, reason: str) -> None:
        if reason != self.failure:
            logger.warning("%s; queries answer from the last snapshot until it succeeds", reason)
        self.failure = reason

    async def adopt_current(self) -> None:
        """At start-up, before the first build: that build reflects the version stored now."""
        self.seen = await read_version(self.state)

    async def local_change(self) -> bool:
        """After this process changed the graph: publish a new version. True when the version it replaced was not
        the one this process had seen: another process changed the graph meanwhile, so this one's next snapshot
        must read everything (a patch with its own changes would lack theirs). Read and write under the shared
        lock, so no other process's version slips in between unseen."""
        async with self.state.lock(VERSION_DOCUMENT):
            stored = await read_version(self.state)
            foreign = stored != self.seen
            self.seen = await write_version(self.state)
        return foreign


# --- a lock held in the shared storage ---------------------------------------------------------------------------
def _pg_lock_key(workspace: str, name: str) -> int:
    digest = hashlib.sha256(f"lightrag_prism|{workspace}|{name}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.asynccontextmanager
async def _postgres_lock(store, name: str) -> AsyncIterator[None]:
    # A session-level advisory lock on a connection of its own: PostgreSQL frees it if this process dies. Polled
    # (pg_try_advisory_lock), so a waiting session holds no transaction open that DDL elsewhere would wait for.
    key = _pg_lock_key(store.workspace, name)
    async with store.db.pool.acquire() as connection:
        while not await connection.fetchval("SELECT pg_try_advisory_lock($1)", key):
            await asyncio.sleep(LOCK_POLL)
        try:
            yield
        finally:
            await connection.execute("SELECT pg_advisory_unlock($1)", key)


@contextlib.asynccontextmanager
async def _redis_lock(store, name: str) -> AsyncIterator[None]:
    # redis-py's lock (SET NX with a lease, released only by its owner), renewed while held.
    lock = patches.redis_client(store).lock(f"lightrag_prism:lock:{store.workspace}:{name}", timeout=REDIS_LEASE,
                                            sleep=0.05)
    await lock.acquire()

    async def renew() -> None:
        while True:
            await asyncio.sleep(REDIS_LEASE / 3)
            await lock.extend(REDIS_LEASE, replace_ttl=True)

    renewal = asyncio.get_running_loop().create_task(renew())
    try:
        yield
    finally:
        try:
            # Stopped for sure: a renewal whose cancel() was lost (background.py) would extend the lease forever.
            failure = await stop_task(renewal)
        finally:
            await lock.release()
        if failure is not None:  # the lease was lost while held: the block may not have run alone
            raise failure


@contextlib.asynccontextmanager
async def _keyed_lock(store, name: str) -> AsyncIterator[None]:
    from lightrag.kg.shared_storage import get_storage_keyed_lock

    async with get_storage_keyed_lock([name], namespace=f"{store.workspace}:lightrag_prism"):
        yield


def shared_lock(store, name: str):
    """``async with shared_lock(store, name):`` one holder at a time among every process using the LightRAG KV
    storage ``store`` (the plugin state's)."""
    kind = type(store).__name__
    if kind == PG_KV_CLASS:
        return _postgres_lock(store, name)
    if kind == REDIS_KV_CLASS:
        return _redis_lock(store, name)
    return _keyed_lock(store, name)


# --- one document pipeline at a time among the processes sharing a workspace --------------------------------------
_turn_held: ContextVar[object | None] = ContextVar("lightrag_prism_pipeline_turn", default=None)


class PipelineTurn:
    """``async with turn():`` around LightRAG's pipeline run, document delete and custom-chunk insert.

    LightRAG runs one of those at a time per workspace through its ``busy`` flag, which lives in one server's
    memory (shared by its workers). Replicas each have their own flag, and a pipeline resumes every PROCESSING
    document it finds as one a crash interrupted: it resets it to PENDING and purges its chunks and graph
    contributions, while the replica that owns it is still writing them (seen: chunks of processed documents
    missing). A turn is that flag held in the shared storage (``shared_lock``): one process at a time and, within
    a process, one task at a time, so at most one connection per process waits on the server. Re-entrant for the
    task holding it: a delete hands the documents queued meanwhile to a pipeline run in the same task.
    """

    def __init__(self, state) -> None:
        self.state = state
        self._local = asyncio.Lock()
        self._holder: object | None = None  # this turn's token; tasks started inside copy it, so it is per turn

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[None]:
        if self._holder is not None and _turn_held.get() is self._holder:
            yield
            return
        async with self._local:
            async with self.state.lock(PIPELINE_LOCK):
                self._holder = holder = object()
                token = _turn_held.set(holder)
                try:
                    yield
                finally:
                    _turn_held.reset(token)
                    self._holder = None
