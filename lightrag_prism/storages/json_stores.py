"""What LightRAG's two JSON stores (``JsonKVStorage``, ``JsonDocStatusStorage``) do differently as PrismRAG's.

Both keep one dict per (namespace, workspace) in the process and rewrite their whole file on every flush. Here:

* **Loading** (``initialize``, the process's first instance of the namespace) replays the file's journal
  (``lightrag_prism/journal.py``) after reading the file, and notes what it read when the file is journaled.
* **Flushing** (``index_done_callback``) appends what changed to the journal when the file is journaled
  (``register_files``), else rewrites the file whole; a whole rewrite goes through :func:`write_json_fast`.
* **Writes note their keys** (:meth:`JournaledJsonStore._writing`), so a flush compares only those.

The shared-memory protocol is LightRAG's own (the namespace lock, the update flags, the init lock): these methods
are ``JsonKVStorage.initialize``/``index_done_callback`` with the file read and write replaced, nothing else.
"""

from __future__ import annotations

import contextlib
from typing import Any

from lightrag_prism import journal

def write_json_fast(json_obj, file_name: str) -> bool:
    """``lightrag.utils.write_json(json_obj, file_name)`` by orjson: the same bytes, about 20 times faster.

    ``json.dump(..., indent=2)`` takes the standard library's pure-Python encoder (13 ms per doc-status write at
    1,000 passages); ``orjson.dumps(..., OPT_INDENT_2)`` writes the same text (a float in exponent notation may
    differ in its exponent's digits, the same value; ``tests/foundation/test_fast_json.py``). Every value orjson
    would write differently goes to LightRAG's writer: what orjson cannot encode (non-string keys, integers beyond
    64 bits, lone surrogates, ...) and NaN or infinities (orjson writes ``null``). Returns what ``write_json``
    returns: whether the data was sanitised (then the caller reloads the file)."""
    import orjson
    from lightrag.file_atomic import atomic_write
    from lightrag.utils import write_json

    options = orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
    try:
        data = orjson.dumps(json_obj, option=options)
    except (TypeError, orjson.JSONEncodeError):
        return write_json(json_obj, file_name)
    if b"null" in data and orjson.loads(data) != json_obj:  # NaN/inf became null
        return write_json(json_obj, file_name)

    def write(tmp_path: str) -> None:
        with open(tmp_path, "wb") as handle:
            handle.write(data)

    atomic_write(file_name, write)
    return False


def write_journaled(data: dict, file_name: str, kind) -> bool:
    """Persist ``data`` (a store's dict, of journal ``kind``) to ``file_name``: what changed appended to its journal
    when the file is journaled, else a whole rewrite (any journal is stale then). Returns whether LightRAG's
    writer sanitised a value (the caller reloads the file)."""
    state = journal.registered(file_name)
    sanitized: list[bool] = []

    def whole() -> None:
        sanitized.append(write_json_fast(data, file_name))

    if state is None:
        whole()
        journal.remove_journal(file_name)
    else:
        journal.flush(state, kind, data, whole)
    return bool(sanitized and sanitized[-1])


def named_keys(ids) -> list | None:
    """The keys a write names, or None when they cannot be read without consuming the argument."""
    return list(ids) if isinstance(ids, (list, tuple, set, frozenset, dict)) else None


class JournaledJsonStore:
    """Mixin for the two JSON store subclasses (before LightRAG's class in the bases). ``journal_kind`` is the
    journal's view of the store's dict."""

    journal_kind: Any = journal.TrackedKVKind

    async def initialize(self):
        from lightrag.kg.shared_storage import (get_data_init_lock, get_namespace_data, get_namespace_lock,
                                                get_update_flag, try_initialize_namespace)

        self._storage_lock = get_namespace_lock(self.namespace, workspace=self.workspace)
        self.storage_updated = await get_update_flag(self.namespace, workspace=self.workspace)
        async with get_data_init_lock():
            need_init = await try_initialize_namespace(self.namespace, workspace=self.workspace)
            self._data = await get_namespace_data(self.namespace, workspace=self.workspace)
            if need_init and not self._defer_read():
                loaded = self._read_file()
                async with self._storage_lock:
                    loaded = await self._loaded(loaded)
                    self._data.update(loaded)
        self._after_load()

    def _defer_read(self) -> bool:
        """Whether the file is read on first use instead (the first initializer of the namespace decides)."""
        return False

    def _read_file(self, file_name: str | None = None) -> dict:
        """The file (this store's, or ``file_name``) and its journal (LightRAG's reader; an empty or missing file is
        empty)."""
        from lightrag.utils import load_json

        file_name = file_name or self._file_name
        loaded = load_json(file_name)
        return {} if loaded is None else journal.replay(file_name, self.journal_kind, loaded)

    async def _loaded(self, data: dict) -> dict:
        """What goes into the shared dict from the file's content (the KV store migrates old cache records)."""
        return data

    def _after_load(self) -> None:
        """The shared dict may hold other rows now (the doc-status index rebuilds)."""

    async def index_done_callback(self) -> None:
        from lightrag.kg.shared_storage import clear_all_update_flags
        from lightrag.utils import commit_in_storage_io

        async with self._storage_lock:
            if not self.storage_updated.value:
                return
            state = journal.registered(self._file_name)
            if state is not None and state.shared_content:
                return await self._flush_shared(state)
            data = self._data.copy()  # a plain dict even from a manager proxy (one call)
            sanitized: list[bool] = []

            def write() -> None:
                sanitized.append(write_journaled(data, self._file_name, self.journal_kind))

            async def committed() -> None:
                if sanitized and sanitized[-1]:
                    self._follow_sanitized_file()
                await clear_all_update_flags(self.namespace, workspace=self.workspace)

            await commit_in_storage_io(write, committed)

    def _follow_sanitized_file(self) -> None:
        """LightRAG's writer cleaned a value while rewriting the file whole: the dict takes the file's content (just
        rewritten, no journal: noted as saved)."""
        cleaned = self._read_file()
        self._data.clear()
        self._data.update(cleaned)
        self._after_load()

    async def _flush_shared(self, state: journal.FileState) -> None:
        """The flush in LightRAG's multi-process mode (the dict is the manager's, shared by the processes): what
        this process's writes named is appended with the values the dict holds now (``journal.SharedKVKind``), read
        key by key in the storage-IO thread; LightRAG copied the whole dict through the manager on the event loop
        and rewrote the file (the vector cache of the 9,000-passage bench index: 288 MB, seconds, after every
        upload). Only this process's update flag is cleared: the others' writes are theirs to append."""
        from lightrag.utils import commit_in_storage_io

        sanitized: list[bool] = []
        data, file_name = self._data, self._file_name

        def write() -> None:
            journal.flush(state, journal.SharedKVKind, data,
                          lambda: sanitized.append(write_json_fast(data.copy(), file_name)))

        async def committed() -> None:
            if sanitized and sanitized[-1]:
                self._follow_sanitized_file()
            self.storage_updated.value = False

        await commit_in_storage_io(write, committed)

    @contextlib.contextmanager
    def _writing(self, ids):
        """Around a write that changes the keys ``ids`` (None: keys its arguments do not name). The keys are
        pinned for the write's duration (``journal.pinned``): the doc-status store flushes before its writes
        return, and every flush meanwhile must look at them. An unnamed write makes the flushes during and after
        it compare everything."""
        if ids is None:
            journal.untrack(self._file_name)
            try:
                yield
            finally:
                journal.untrack(self._file_name)
            return
        with journal.pinned(self._file_name, ids):
            yield

    async def drop(self) -> dict[str, str]:
        with self._writing(None):
            return await super().drop()
