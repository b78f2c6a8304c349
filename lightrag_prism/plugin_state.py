"""The plugin's own persisted state, kept in LightRAG KV storages of the instance's configured backend.

Two namespaces, both honouring ``workspace``:

* ``prism_state``: small JSON documents (the merge log and journal, merge plans, entity aliases, document
  timestamps, discovered entity types), one record each, read fresh on every use so that two instances on the
  same storages see the same state;
* ``prism_vectors``: the hipporag/prism name and fact embeddings, one record per vector (float32, base64), a
  cache keyed by index and id: an instance embeds only what neither its memory nor the store holds. On the file
  storages the vectors are in ``prism_vectors.bin`` instead (``vector_log.py``: read from disk when
  asked for, not held in memory; a ``kv_store_prism_vectors.json`` of an older version is converted once).

Why KV and not a vector store: the modes need the whole matrix in memory for one dense product, and exact
vectors back (identical rankings on every backend); LightRAG's vector stores embed content themselves and, on
PostgreSQL, exist only for LightRAG's three namespaces.

Records have the LLM-cache shape (``return``, ``original_prompt``, ``cache_type``) because ``PGKVStorage`` only
knows LightRAG's own namespaces: on PostgreSQL the plugin's records go in the LLM-cache table under the workspace
``<workspace>_prism``, so clearing LightRAG's LLM cache leaves them alone. Every save is one upsert followed by
the storage's flush (JSON: an atomic file replace; PostgreSQL: one transaction; Redis: one SET).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

import numpy as np

from .background import wait_for_tasks
from .coordination import PG_KV_CLASS, shared_lock
from .jsonfile import read_json, write_json_atomic

logger = logging.getLogger(__name__)

STATE_NAMESPACE, VECTOR_NAMESPACE = "prism_state", "prism_vectors"
VECTOR_FILE = "prism_vectors.bin"  # the vector cache on the file storages, beside their kv_store_*.json
PG_NAMESPACE, PG_WORKSPACE_SUFFIX = "llm_response_cache", "_prism"
READ_BATCH = 1000  # ids per get_by_ids call (one SQL query / one Redis pipeline)


def _record(key: str, text: str, kind: str) -> dict[str, Any]:
    return {"return": text, "original_prompt": key, "cache_type": kind}


class FileDocument:
    """A JSON document in a file (atomic writes): the plugin's storage before it moved to LightRAG KV storages,
    still used by tests and tools that work on a folder."""

    def __init__(self, path) -> None:
        self.path = path

    async def load(self, default: Any) -> Any:
        return read_json(self.path, default)

    async def save(self, value: Any) -> None:
        write_json_atomic(self.path, value)


async def save_records(store, values: dict[str, Any]) -> None:
    """JSON documents by key into a LightRAG KV storage: one upsert, then its flush."""
    await store.upsert({key: _record(key, json.dumps(value, ensure_ascii=False), "prism_state")
                        for key, value in values.items()})
    await store.index_done_callback()


class KVDocument:
    """A JSON document stored as one record of a LightRAG KV storage."""

    def __init__(self, store, key: str) -> None:
        self.store, self.key = store, key

    async def load(self, default: Any) -> Any:
        record = await self.store.get_by_id(self.key)
        if not record or not isinstance(record.get("return"), str):
            return default
        try:
            return json.loads(record["return"])
        except json.JSONDecodeError as exc:  # a damaged record must not be mistaken for an empty one
            raise ValueError(f"plugin state record {self.key!r} is not valid JSON ({exc})") from exc

    async def save(self, value: Any) -> None:
        await save_records(self.store, {self.key: value})


def encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


def vector_key(index: str, vid: str) -> str:
    # Hashed: ids are entity names and fact keys of any length; PostgreSQL's id column holds 255 characters.
    return f"{index}:{hashlib.sha256(vid.encode('utf-8')).hexdigest()[:40]}"


class KVVectors:
    """The vector cache's backend on a LightRAG KV storage (PostgreSQL, Redis, any other): one record per vector."""

    def __init__(self, store) -> None:
        self.store = store

    async def read(self, index: str, ids: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), READ_BATCH):
            batch = ids[start:start + READ_BATCH]
            records = await self.store.get_by_ids([vector_key(index, v) for v in batch])
            for vid, record in zip(batch, records):
                # original_prompt holds the id: a (vanishingly unlikely) hash collision is a miss, not a wrong vector
                if record and record.get("original_prompt") == vid and isinstance(record.get("return"), str):
                    found[vid] = decode_vector(record["return"])
        return found

    async def write(self, index: str, vectors: dict[str, np.ndarray], dropped: list[str] = ()) -> None:
        if vectors:
            await self.store.upsert({vector_key(index, vid): _record(vid, encode_vector(vec), "prism_vector")
                                     for vid, vec in vectors.items()})
        if dropped:
            await self.store.delete([vector_key(index, vid) for vid in dropped])

    async def flush(self) -> None:
        await self.store.index_done_callback()


class VectorCache:
    """Vectors by (index, id) in a backend: :class:`KVVectors`, or on the file storages
    ``vector_log.FileVectors`` (a file of its own, not held in memory)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self._deferring = 0
        self._unflushed = False
        self._behind: set[asyncio.Task] = set()  # flushes left to run after their block (see one_flush)

    @asynccontextmanager
    async def one_flush(self, behind: bool = False) -> AsyncIterator[None]:
        """Updates inside the block share one flush at its end: a JSON store rewrites its whole file per flush, and
        an insert syncs two indexes (names and facts) into the same store. ``behind``: the block does not wait for
        that flush (a query's views: the vectors are in memory, the store is a cache, and the flush cost the first
        query after a change about 9 ms); :meth:`settle` waits for such flushes."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring and self._unflushed:
                self._unflushed = False
                if behind:
                    task = asyncio.ensure_future(self._flush_logged())
                    self._behind.add(task)
                    task.add_done_callback(self._behind.discard)
                else:
                    await self.backend.flush()

    async def _flush_logged(self) -> None:
        try:
            await self.backend.flush()
        except Exception as exc:  # noqa: BLE001 - a cache: the vectors stay in memory, the next flush writes them
            logger.warning("the plugin's vector cache could not be flushed: %s", exc)
            self._unflushed = True

    async def settle(self) -> None:
        """Wait for the flushes :meth:`one_flush` left running."""
        # On the loop of the query that left them (a sync method's own, see background.py). Only the tasks not done
        # are waited for: a finished one stays in _behind until its discard callback runs, and waiting on nothing
        # never yields to the loop that would run it. New flushes may join while we wait, hence the loop.
        while pending := [t for t in self._behind if not t.done() and not t.get_loop().is_closed()]:
            await wait_for_tasks(pending)
        stranded = any(not task.done() for task in self._behind)
        self._behind.clear()
        if stranded:  # their loop was closed under them: they never ran, so flush here instead
            await self._flush_logged()

    async def get(self, index: str, ids: list[str]) -> dict[str, np.ndarray]:
        return await self.backend.read(index, ids)

    async def update(self, index: str, vectors: dict[str, np.ndarray], dropped: list[str] = ()) -> None:
        """Store ``vectors`` and delete the ``dropped`` ids, then flush once (or at the end of :meth:`one_flush`)."""
        if not (vectors or dropped):
            return
        await self.backend.write(index, vectors, dropped)
        if self._deferring:
            self._unflushed = True
        else:
            await self.backend.flush()


def _file_name(store) -> str | None:
    """The JSON file of a file KV storage (LightRAG's ``JsonKVStorage`` and subclasses), else None."""
    from lightrag.kg.json_kv_impl import JsonKVStorage

    return getattr(store, "_file_name", None) if isinstance(store, JsonKVStorage) else None


class PluginState:
    """The instance's two plugin namespaces; created in ``__post_init__``, opened by ``initialize_storages``."""

    def __init__(self, rag) -> None:
        self.on_postgres = rag.kv_storage == PG_KV_CLASS
        self.documents_store = self._storage(rag, STATE_NAMESPACE)
        # The vectors: in a file of their own on the file storages (not held in memory, see vector_log.py), else
        # in a KV storage (on PostgreSQL the documents' one).
        self.vectors_store = None
        self._vector_file = None
        if self.on_postgres:
            self.vectors_store = self.documents_store
        elif _file_name(self.documents_store) is not None:
            from .vector_log import FileVectors

            folder = os.path.dirname(_file_name(self.documents_store))
            self._vector_file = FileVectors(os.path.join(folder, VECTOR_FILE))
            self._legacy_vector_file = os.path.join(folder, f"kv_store_{VECTOR_NAMESPACE}.json")
        else:
            self.vectors_store = self._storage(rag, VECTOR_NAMESPACE)
        self._vectors = VectorCache(self._vector_file or KVVectors(self.vectors_store))
        self.ready = False
        self._lock = asyncio.Lock()

    def _storage(self, rag, namespace: str):
        return rag.key_string_value_json_storage_cls(
            namespace=PG_NAMESPACE if self.on_postgres else namespace, workspace=rag.workspace,
            embedding_func=rag.embedding_func)

    def _stores(self) -> list:
        """The distinct storages (one on PostgreSQL)."""
        separate = self.vectors_store is not None and self.vectors_store is not self.documents_store
        return [self.documents_store] + ([self.vectors_store] if separate else [])

    async def initialize(self) -> None:
        async with self._lock:
            if self.ready:
                return
            for store in self._stores():
                await store.initialize()
            if self._vector_file is not None:
                await self._vector_file.adopt_json_cache(self._legacy_vector_file)
            if self.on_postgres and not self.documents_store.workspace.endswith(PG_WORKSPACE_SUFFIX):
                # After initialize: PGKVStorage settles its workspace there (PG_WORKSPACE, then ours, then "default").
                self.documents_store.workspace += PG_WORKSPACE_SUFFIX
            self.ready = True

    async def finalize(self) -> None:
        async with self._lock:
            if self.ready:
                await self._vectors.settle()
                if self._vector_file is not None:
                    await self._vector_file.flush()  # what a failed flush left
                for store in self._stores():
                    await store.finalize()
                self.ready = False

    def _check_ready(self) -> None:
        if not self.ready:
            raise RuntimeError("the plugin's state is not open: call `await rag.initialize_storages()` first")

    def document(self, name: str) -> KVDocument:
        self._check_ready()
        return KVDocument(self.documents_store, name)

    def lock(self, name: str):
        """``async with state.lock(name):`` held by one process at a time among all that share these storages
        (``coordination.shared_lock``)."""
        self._check_ready()
        return shared_lock(self.documents_store, name)

    async def save_documents(self, values: dict[str, Any]) -> None:
        """Save several documents in one upsert and one flush (no read: nothing of another writer is lost)."""
        self._check_ready()
        await save_records(self.documents_store, values)

    async def update(self, name: str, change: Callable[[Any], Any], default: Any) -> Any:
        """Read, change and save one document under the shared lock of its name (concurrent writers in other
        processes or replicas wait, so none loses another's change); returns the new value."""
        async with self.lock(f"document:{name}"):
            document = self.document(name)
            value = change(await document.load(default))
            await document.save(value)
            return value

    async def clear(self, keep: tuple[str, ...] = ()) -> None:
        """Drop both namespaces, except the documents named in ``keep`` (saved again after the drop)."""
        kept = {name: await self.document(name).load(None) for name in keep}
        for store in self._stores():
            await store.drop()
        if self._vector_file is not None:
            await self._vector_file.drop()
        for name, value in kept.items():
            if value is not None:
                await self.document(name).save(value)

    @property
    def vectors(self) -> VectorCache:
        self._check_ready()
        return self._vectors


_BY_CHUNK_STORE: dict[int, PluginState] = {}  # id(rag.text_chunks) -> its instance's state (for LightRAG's hooks)


def register(rag, state: PluginState) -> None:
    _BY_CHUNK_STORE[id(rag.text_chunks)] = state


def unregister(rag) -> None:
    _BY_CHUNK_STORE.pop(id(rag.text_chunks), None)


def state_of_chunk_store(text_chunks) -> PluginState | None:
    """The plugin state of the instance that owns ``text_chunks`` (LightRAG's rebuild hook only passes that)."""
    return _BY_CHUNK_STORE.get(id(text_chunks))


def find_plugin_state(rag) -> PluginState | None:
    """The instance's plugin state (on its seam, ``seam.py``), or None for an object that has none (a plain
    LightRAG, duck-typed instances in tests, tools)."""
    seam = rag.__dict__.get("prism_seam")
    return getattr(seam, "plugin_state", None)


def plugin_state(rag) -> PluginState:
    state = find_plugin_state(rag)
    if state is None:
        raise RuntimeError("this LightRAG instance has no plugin state (not a lightrag_prism.LightRAG)")
    return state
