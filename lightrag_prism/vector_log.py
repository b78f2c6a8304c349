"""The plugin's vector cache on the file storages: one append-only file of fixed-size records, of which a process
holds only where each key's latest record is.

In a JSON KV store (the cache's home before) every name and fact vector stayed in the process as a base64 string in
the store's dict: 329 MB at 9,222 passages, beside the name and fact indexes that hold the same vectors as
matrices. Here the vectors stay on disk and are read when asked for (the indexes ask for all of them once, when a
process opens the index); the process keeps a 16-byte key and a record number per vector.

**File.** A 32-byte header (magic, version, dimension), then records of ``32 + 4 * dim`` bytes: a 16-byte key
(BLAKE2b of the index name and the id), an operation (1 put, 2 delete), 12 reserved bytes, the vector (float32).
A key's latest record wins.

**Processes share it** (``serve --workers``, instances on one working dir): appends and rewrites hold an exclusive
``flock`` on ``<file>.lock``; a reader that misses a key first reads what others appended since it last looked; a
rewrite (compaction, drop) replaces the file, which readers notice by its identity and read again. A record cut
short by a crash is never read (only whole records are), and the next writer cuts it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import threading
from typing import Iterator

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process per working dir
    fcntl = None

MAGIC, VERSION = b"PRISMVEC", 1
HEADER_SIZE = 32
PUT, DELETE = 1, 2
COMPACT_SHARE = 2  # rewrite the file once it holds more than twice as many records as live keys ...
COMPACT_MIN_RECORDS = 4096  # ... and at least this many (small files are cheap to keep)
READ_BLOCK_RECORDS = 8192  # records per read when scanning the file


class VectorLogError(ValueError):
    """The file is not a vector log, or holds vectors of another dimension."""


KEY = np.dtype("V16")


def record_dtype(dim: int) -> np.dtype:
    return np.dtype([("key", "V16"), ("op", "<u4"), ("reserved", "V12"), ("vector", "<f4", (dim,))])


def log_key(index: str, vid: str) -> bytes:
    """16 bytes naming (index, id): ids are entity names and fact keys of any length."""
    text = f"{index}\0{vid}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


def _header(dim: int) -> bytes:
    return MAGIC + VERSION.to_bytes(4, "little") + dim.to_bytes(4, "little") + bytes(HEADER_SIZE - 16)


class KeyRows:
    """16-byte key -> record number: two sorted numpy arrays (24 bytes a key) and a dict of the changes since they
    were last merged. A dict of every key held about 130 bytes a key (24 MB for the 189,000 vectors of the
    9,239-passage bench index). A record number of -1 is a deletion."""

    MERGE_MIN, MERGE_SHARE = 4096, 8  # merge the dict once it holds this many keys, or 1/8 of the arrays'

    def __init__(self) -> None:
        self.keys = np.empty(0, dtype=KEY)
        self.rows = np.empty(0, dtype=np.int64)
        self.recent: dict[bytes, int] = {}

    def size_bound(self) -> int:
        """At least the number of keys held (no merge)."""
        return len(self.keys) + len(self.recent)

    def __len__(self) -> int:
        self._merge_recent()
        return len(self.keys)

    def set_many(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """``keys[i]`` -> ``rows[i]`` (-1: deleted); a key given twice takes its last row."""
        if len(keys) + len(self.recent) > max(self.MERGE_MIN, len(self.keys) // self.MERGE_SHARE):
            self._merge(keys, rows)
        else:
            self.recent.update(zip(keys.tolist(), rows.tolist()))

    def get_many(self, keys: list[bytes]) -> np.ndarray:
        """The record number of each key, -1 where it has none."""
        out = np.full(len(keys), -1, dtype=np.int64)
        look = []
        for i, key in enumerate(keys):
            row = self.recent.get(key)
            if row is None:
                look.append(i)
            else:
                out[i] = row
        if look and len(self.keys):
            wanted = np.array([keys[i] for i in look], dtype=KEY)
            at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
            hit = self.keys[at] == wanted
            out[np.asarray(look)[hit]] = self.rows[at[hit]]
        return out

    def by_row(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, record numbers) of the keys held, in record order."""
        self._merge_recent()
        order = np.argsort(self.rows, kind="stable")
        return self.keys[order], self.rows[order]

    def _merge_recent(self) -> None:
        self._merge(np.empty(0, dtype=KEY), np.empty(0, dtype=np.int64))

    def _merge(self, keys: np.ndarray, rows: np.ndarray) -> None:
        if self.recent:
            keys = np.concatenate([np.array(list(self.recent), dtype=KEY), keys])
            rows = np.concatenate([np.fromiter(self.recent.values(), dtype=np.int64, count=len(self.recent)), rows])
            self.recent = {}
        if not len(keys):
            return
        # the last row given for each key
        unique, last_from_end = np.unique(keys[::-1], return_index=True)
        rows = rows[::-1][last_from_end]
        keep = np.ones(len(self.keys), dtype=bool)
        if len(self.keys):
            at = np.minimum(np.searchsorted(self.keys, unique), len(self.keys) - 1)
            keep[at[self.keys[at] == unique]] = False
        live = rows >= 0
        merged_keys = np.concatenate([self.keys[keep], unique[live]])
        merged_rows = np.concatenate([self.rows[keep], rows[live]])
        order = np.argsort(merged_keys, kind="stable")
        self.keys, self.rows = merged_keys[order], merged_rows[order]


class VectorLog:
    """Vectors by 16-byte key in ``path`` (see the module docs). Thread-safe; blocking (see :class:`FileVectors`)."""

    def __init__(self, path: str) -> None:
        self.path, self.lock_path = path, path + ".lock"
        self._mutex = threading.Lock()
        self._rows = KeyRows()  # key -> record number of its latest put
        self._records = 0  # whole records read
        self._dim: int | None = None
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file read
        self.rewrites = 0  # compactions and drops by this object (tests, status)

    def __len__(self) -> int:
        """How many keys the file holds (what other processes appended included)."""
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            with self._mutex:
                self._forget()
            return 0
        with handle, self._mutex:
            self._follow(handle)
            return len(self._rows)  # merges the recent changes

    # --- reading ----------------------------------------------------------------------------------------------

    def read(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors of the keys the file holds (copies)."""
        if not keys:
            return {}
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            with self._mutex:
                self._forget()
            return {}
        with handle, self._mutex:
            rows = self._rows.get_many(keys)
            if (rows < 0).any() or self._identity != _identity(handle):
                self._follow(handle)
                rows = self._rows.get_many(keys)
            found = np.flatnonzero(rows >= 0)
            if not len(found):
                return {}
            records = np.memmap(handle, dtype=record_dtype(self._dim), mode="r", offset=HEADER_SIZE,
                                shape=(self._records,))
            vectors = np.array(records["vector"][rows[found]])
            del records
        return {keys[i]: vector for i, vector in zip(found.tolist(), vectors)}

    def _forget(self) -> None:
        self._rows, self._records, self._dim, self._identity = KeyRows(), 0, None, None

    def _follow(self, handle) -> None:
        """Read the records of ``handle`` not read yet (all of them when it is another file than the one read)."""
        identity = _identity(handle)
        size = os.fstat(handle.fileno()).st_size
        if identity != self._identity:
            self._forget()
            if size < HEADER_SIZE:
                return
            handle.seek(0)
            self._dim = _parse_header(handle.read(HEADER_SIZE), self.path)
            self._identity = identity
        dtype = record_dtype(self._dim)
        handle.seek(HEADER_SIZE + self._records * dtype.itemsize)
        keys, ops = [], []
        while block := handle.read(dtype.itemsize * READ_BLOCK_RECORDS):
            count = len(block) // dtype.itemsize
            if not count:
                break
            records = np.frombuffer(block, dtype=dtype, count=count)
            keys.append(records["key"].copy())
            ops.append(records["op"].copy())
            if count < READ_BLOCK_RECORDS:
                break
        if keys:
            keys, ops = np.concatenate(keys), np.concatenate(ops)
            numbers = np.arange(self._records, self._records + len(keys), dtype=np.int64)
            valid = (ops == PUT) | (ops == DELETE)
            self._rows.set_many(keys[valid], np.where(ops[valid] == PUT, numbers[valid], -1))
            self._records += len(keys)

    # --- writing ----------------------------------------------------------------------------------------------

    def write(self, puts: dict[bytes, np.ndarray], deletes: list[bytes] = ()) -> None:
        """Append ``puts`` and ``deletes`` (one write), then compact the file if it is mostly dead records."""
        deletes = [key for key in deletes if key not in puts]
        if not puts and not deletes:
            return
        with self._exclusive():
            self._write_locked(puts, deletes)

    def _write_locked(self, puts: dict[bytes, np.ndarray], deletes: list[bytes]) -> None:
        vectors = np.asarray(list(puts.values()), dtype=np.float32) if puts else None
        with self._mutex:
            handle = self._open_for_append(vectors.shape[1] if vectors is not None else None)
            if handle is None:  # deletes only, and no file: nothing to delete
                return
            with handle:
                self._follow(handle)
                if vectors is not None and vectors.shape[1] != self._dim:
                    raise VectorLogError(
                        f"{self.path} holds vectors of dimension {self._dim}, not {vectors.shape[1]}: the embedding "
                        f"model changed; index into a new working dir (or clear this one)")
                dtype = record_dtype(self._dim)
                end = HEADER_SIZE + self._records * dtype.itemsize
                if os.fstat(handle.fileno()).st_size != end:  # a record cut short by a crash
                    handle.truncate(end)
                batch = np.zeros(len(puts) + len(deletes), dtype=dtype)
                batch["key"] = list(puts) + deletes
                batch["op"][:len(puts)] = PUT
                batch["op"][len(puts):] = DELETE
                if vectors is not None:
                    batch["vector"][:len(puts)] = vectors
                handle.seek(end)
                handle.write(batch.tobytes())
                handle.flush()
                os.fsync(handle.fileno())
                self._rows.set_many(batch["key"], np.where(batch["op"] == PUT,
                                                           np.arange(self._records, self._records + len(batch)), -1))
                self._records += len(batch)
                if self._records > max(COMPACT_MIN_RECORDS, COMPACT_SHARE * self._rows.size_bound()):
                    self._compact(handle)

    def _open_for_append(self, dim: int | None):
        try:
            return open(self.path, "r+b")
        except FileNotFoundError:
            if dim is None:
                return None
        _replace(self.path, _header(dim))
        return open(self.path, "r+b")

    def _compact(self, handle) -> None:
        """Rewrite the file with the live records only (under the lock)."""
        dtype = record_dtype(self._dim)
        keys, rows = self._rows.by_row()
        records = np.memmap(handle, dtype=dtype, mode="r", offset=HEADER_SIZE, shape=(self._records,))

        def content(out) -> None:
            out.write(_header(self._dim))
            for start in range(0, len(rows), READ_BLOCK_RECORDS):
                out.write(np.ascontiguousarray(records[rows[start:start + READ_BLOCK_RECORDS]]).tobytes())

        _replace(self.path, content)
        del records
        self._rows = KeyRows()
        self._rows.set_many(keys, np.arange(len(keys), dtype=np.int64))
        self._records = len(keys)
        with open(self.path, "rb") as fresh:
            self._identity = _identity(fresh)
        self.rewrites += 1

    def drop(self) -> None:
        """Remove every vector (the file is removed; the next write creates it)."""
        with self._exclusive(), self._mutex:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)
            self._forget()
            self.rewrites += 1

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Held by one process at a time among those sharing the file (``flock`` on a file that is never
        replaced: a lock on the log itself would be lost with the inode a compaction replaces)."""
        if fcntl is None:  # pragma: no cover
            yield
            return
        with open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _identity(handle) -> tuple[int, int]:
    stat = os.fstat(handle.fileno())
    return stat.st_dev, stat.st_ino


def _parse_header(header: bytes, path: str) -> int:
    if len(header) < HEADER_SIZE or header[:8] != MAGIC:
        raise VectorLogError(f"{path} is not a lightrag_prism vector cache")
    version = int.from_bytes(header[8:12], "little")
    if version != VERSION:
        raise VectorLogError(f"{path} has format {version}; this lightrag_prism reads format {VERSION}")
    return int.from_bytes(header[12:16], "little")


def _replace(path: str, content) -> None:
    """Write ``content`` (bytes, or a function of the open file) to a temporary sibling, then replace ``path``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        if callable(content):
            content(out)
        else:
            out.write(content)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


class FileVectors:
    """:class:`VectorLog` as the vector cache's backend (``plugin_state.VectorCache``): writes wait in memory for
    the cache's flush, which appends them in one write; file work runs in a thread. Flushes write one at a time, in
    the order they took their batch, so a later write of a key is never overtaken by an earlier one."""

    def __init__(self, path: str) -> None:
        self.log = VectorLog(path)
        self._pending: dict[bytes, np.ndarray | None] = {}  # key -> vector to put, or None: delete
        self._in_flight: dict[bytes, np.ndarray | None] = {}  # the batch a flush is writing
        self._pending_lock = threading.Lock()  # the event loop writes, a flush's thread takes
        self._flush_lock = threading.Lock()

    async def read(self, index: str, ids: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        ask: list[tuple[str, bytes]] = []
        with self._pending_lock:
            for vid in ids:
                key = log_key(index, vid)
                held = self._pending if key in self._pending else self._in_flight
                if key not in held:
                    ask.append((vid, key))
                elif held[key] is not None:  # None: deleted, not written yet
                    found[vid] = held[key]
        if ask:
            stored = await asyncio.to_thread(self.log.read, [key for _, key in ask])
            found.update((vid, stored[key]) for vid, key in ask if key in stored)
        return found

    async def write(self, index: str, vectors: dict[str, np.ndarray], dropped: list[str] = ()) -> None:
        with self._pending_lock:
            for vid in dropped:
                self._pending[log_key(index, vid)] = None
            for vid, vector in vectors.items():
                self._pending[log_key(index, vid)] = np.asarray(vector, dtype=np.float32)

    async def flush(self) -> None:
        if self._pending:
            await asyncio.to_thread(self._flush)

    def _flush(self) -> None:
        with self._flush_lock:
            with self._pending_lock:
                batch, self._pending = self._pending, {}
                self._in_flight = batch
            try:
                self.log.write({key: v for key, v in batch.items() if v is not None},
                               [key for key, v in batch.items() if v is None])
            except BaseException:
                with self._pending_lock:  # not written: into the next flush, under what was written since
                    self._pending = {**batch, **self._pending}
                raise
            finally:
                with self._pending_lock:
                    self._in_flight = {}

    async def drop(self) -> None:
        with self._pending_lock:
            self._pending = {}
        await asyncio.to_thread(self.log.drop)

    async def adopt_json_cache(self, json_path: str) -> int:
        """Convert the JSON KV store an older version kept the vectors in (with its journal) into this file, then
        remove it. Returns how many vectors were converted (0: nothing to convert, or done by another process)."""
        if not os.path.exists(json_path):
            return 0
        return await asyncio.to_thread(self._adopt_json_cache, json_path)

    def _adopt_json_cache(self, json_path: str) -> int:
        import base64

        from lightrag.utils import load_json

        from lightrag_prism import journal

        with self.log._exclusive():  # one process converts; the others find the JSON gone
            if not os.path.exists(json_path):
                return 0
            puts: dict[bytes, np.ndarray] = {}
            if not os.path.exists(self.log.path):  # else converted already (a crash before the removal below)
                # as the JSON store read it: LightRAG's reader, then the journal
                records = journal.replay(json_path, journal.TrackedKVKind, load_json(json_path) or {})
                by_dim: dict[int, dict[bytes, np.ndarray]] = {}
                for key, record in records.items():
                    vid, text = record.get("original_prompt"), record.get("return")
                    if isinstance(vid, str) and isinstance(text, str) and key.endswith(":" + _legacy_hash(vid)):
                        index = key[:-len(_legacy_hash(vid)) - 1]
                        vector = np.frombuffer(base64.b64decode(text), dtype=np.float32)
                        by_dim.setdefault(len(vector), {})[log_key(index, vid)] = vector
                if by_dim:  # several sizes: the embedder changed once; keep the most common
                    puts = max(by_dim.values(), key=len)
                    self.log._write_locked(puts, [])
            for path in (json_path, journal.journal_path(json_path)):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
        return len(puts)


def _legacy_hash(vid: str) -> str:
    """The hash ``plugin_state.vector_key`` put in the JSON store's keys."""
    return hashlib.sha256(vid.encode("utf-8")).hexdigest()[:40]
