"""``NanoVectorDBStorage`` as PrismRAG runs it: its client journaled, updated in O(rows written), saved by orjson.

LightRAG's storage constructs a ``nano_vectordb.NanoVectorDB`` client when it starts (here: on first use), when it
reloads after another process wrote, and on ``drop``; :class:`PrismNanoVectorDBStorage` hands each such client to
:meth:`JournaledNanoVectorDB.adopt` (the client's class becomes the journaled one and its file's journal is
replayed), and its save appends to the journal when the file is journaled (``register_files``).

The file is read when the client is first used, not when LightRAG makes the storage: a process that never reads a
store does not hold it (the relation vectors in a process answering ``prism`` and ``hipporag``), and a first read
through ``_get_client`` runs in a thread. A wrong embedder is still named when the storage is made
(:func:`check_stored_dimension`).

Under ``serve --workers N`` a process flagged by another's write applies what that one appended to the journal
instead of reading the file whole (``journal.catch_up``); a whole read, when needed, runs in a thread.

Private coupling: the storage's ``__post_init__`` (LightRAG 1.5.7's without the read, checked against LightRAG's by
``tests/storages/test_lazy_vector_store.py``), ``_save_to_disk_locked``, ``_reload_client_from_disk_locked`` and
``_get_client`` (overridden, in the symbol registry with nano-vectordb's ``upsert``, ``delete``, ``get`` and
``save``), its ``_client`` (a property here) and ``_client_file_name``, and nano-vectordb's ``__storage`` dict (rows
and matrix, updated in place).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
from functools import partial

import numpy as np
from lightrag.file_atomic import reap_orphan_tmp_files
from lightrag.kg.nano_vector_db_impl import NanoVectorDBStorage
from lightrag.utils import validate_workspace
from nano_vectordb import NanoVectorDB
from nano_vectordb.dbs import Float, array_to_buffer_string, f_ID, f_VECTOR, hash_ndarray, normalize

from lightrag_prism import journal

_NANO_STORAGE = "_NanoVectorDB__storage"
GROWTH = 1.25  # spare rows allocated when a vector store's matrix grows (amortised appends)
FEW_IDS_SHARE = 8  # a vector store's get of up to 1/8 of its rows uses the id -> row index; more, one pass
_PLAIN = (str, int, bool, type(None))
_NOT_READ = object()  # a vector store's client before its file is read


def plain_rows(rows) -> bool:
    """True when every row is a dict of strings, integers, booleans, None or finite floats (orjson and json then
    write the same values)."""
    for row in rows:
        if type(row) is not dict:
            return False
        for value in row.values():
            if not isinstance(value, _PLAIN) and not (type(value) is float and math.isfinite(value)):
                return False
    return True


class JournaledNanoVectorDB(NanoVectorDB):
    """NanoVectorDB that replays its file's journal after loading the file, notes the ids it changes, and
    upserts in O(rows written): ``upsert`` passed over every row to find the ones it updates and stacked the
    whole matrix anew for every new row batch, two O(store) steps per flush. Here an id -> row index finds
    them, and new rows go into spare capacity; ``get`` of a few ids uses that index too. Rows, matrix and report
    equal nano-vectordb's own."""

    rows_kind = journal.RowsKind(f_ID)

    def __post_init__(self):
        super().__post_init__()
        self._after_load()

    @classmethod
    def adopt(cls, client: NanoVectorDB) -> "JournaledNanoVectorDB":
        """``client`` (just loaded from its file by LightRAG) as this class, its file's journal replayed: the
        file is not read twice."""
        if not isinstance(client, cls):
            client.__class__ = cls
        client._after_load()
        return client

    @property
    def rows_and_matrix(self) -> dict:
        """nano-vectordb's private storage dict: ``data`` (the rows) and ``matrix``, updated in place here."""
        return getattr(self, _NANO_STORAGE)

    def _after_load(self) -> None:
        self._prism_buffer = None
        self._prism_rows = None
        journal.replay(self.storage_file, self.rows_kind, self.rows_and_matrix)

    def save(self):
        """nano-vectordb's save through orjson when the rows are plain: the same JSON value without the spaces
        after ``,`` and ``:`` (0.04 s against 0.42 s for a 27,000-row store; ``json.dump`` to a file takes the
        pure-Python encoder). Other rows: nano-vectordb's own."""
        import orjson

        storage = self.rows_and_matrix
        if not plain_rows(storage.get("data", ())):
            return super().save()
        try:
            data = orjson.dumps({**storage, "matrix": array_to_buffer_string(storage["matrix"])})
        except (TypeError, orjson.JSONEncodeError):
            return super().save()
        with open(self.storage_file, "wb") as handle:
            handle.write(data)

    def _cached_row_of(self) -> dict | None:
        """The id -> row index kept for the current row list, or None when the row list is another list or
        another length (a reload, a stock write); ``upsert`` and ``delete`` below keep it current."""
        data, cached = self.rows_and_matrix["data"], self._prism_rows
        return cached[2] if cached is not None and cached[0] is data and cached[1] == len(data) else None

    def _row_of(self) -> dict:
        """id -> row index, rebuilt over every row when not current."""
        row_of = self._cached_row_of()
        if row_of is None:
            data = self.rows_and_matrix["data"]
            row_of = {row[f_ID]: i for i, row in enumerate(data)}
            self._prism_rows = (data, len(data), row_of)
        return row_of

    def current_row_index(self) -> dict | None:
        """The id -> row index if it is current and every id is on one row, else None (never rebuilt here:
        the journal's flush calls this from the storage-IO thread)."""
        row_of = self._cached_row_of()
        return row_of if row_of is not None and len(row_of) == len(self.rows_and_matrix["data"]) else None

    def get(self, ids):
        """nano-vectordb's get (the same rows in the same order), a few ids found through the id -> row index: a
        pass over 21,000 rows was 10 ms, twice in the first query after a deletion. Many ids or an id on two rows:
        one pass with the ids in a set (nano-vectordb tests each row against the list: reading 3,000 ids from a
        30,000-row store took seconds). Unhashable ids: nano-vectordb's own."""
        try:
            wanted = set(ids)
        except TypeError:
            return super().get(ids)
        data = self.rows_and_matrix["data"]
        row_of = self._row_of() if len(wanted) * FEW_IDS_SHARE <= len(data) else None
        if row_of is None or len(row_of) != len(data):
            return [row for row in data if row[f_ID] in wanted]
        return [data[i] for i in sorted(i for i in map(row_of.get, wanted) if i is not None)]

    def upsert(self, datas):
        ids = [data[f_ID] if f_ID in data else hash_ndarray(data[f_VECTOR]) for data in datas]  # as upsert does
        try:
            storage = self.rows_and_matrix
            if self.metric != "cosine":
                return super().upsert(datas)
            row_of = self._row_of()
            by_id = dict(zip(ids, datas))  # a repeated id: the last one wins, as in upsert
            # upsert's update in place, found by id instead of by a pass over every row
            updated = sorted((row_of[vid], vid) for vid in by_id if vid in row_of)
            for i, vid in updated:
                data = by_id[vid]
                storage["matrix"][i] = normalize(data[f_VECTOR]).astype(Float)
                del data[f_VECTOR]
                storage["data"][i] = data
            report = {"update": [vid for _, vid in updated], "insert": []}
            new = {vid: data for vid, data in by_id.items() if vid not in row_of}
            if new:  # upsert's insertion, into spare rows instead of a new stacked matrix
                vectors = np.array([normalize(data[f_VECTOR]) for data in new.values()], dtype=Float)
                for vid, data in new.items():
                    del data[f_VECTOR]
                    data[f_ID] = vid
                row_of.update((vid, len(storage["data"]) + k) for k, vid in enumerate(new))
                storage["data"].extend(new.values())
                storage["matrix"] = self._appended(storage["matrix"], vectors)
                report["insert"].extend(new)
                self._prism_rows = (storage["data"], len(storage["data"]), row_of)
            return report
        finally:
            journal.touch(self.storage_file, ids)

    def _appended(self, matrix, vectors):
        n, k = len(matrix), len(vectors)
        buffer = self._prism_buffer
        if buffer is None or matrix.base is not buffer or len(buffer) < n + k or not matrix.flags.c_contiguous:
            buffer = np.empty((max(int((n + k) * GROWTH), n + k), vectors.shape[1]), dtype=Float)
            buffer[:n] = matrix
            self._prism_buffer = buffer
        buffer[n:n + k] = vectors
        return buffer[:n + k]

    def delete(self, ids):
        """nano-vectordb's delete, with the matrix and the row list compacted in place and the id -> row index
        kept current.

        ``np.delete`` allocated and copied the whole matrix (measured 50 ms per store at 21,000 rows inside an
        indexing process, three stores per document deleted), and the next upsert copied it again into new
        spare capacity. A new row list made the next get/upsert/delete rebuild the index over every row (three
        rebuilds per document deleted from the 9,000-passage bench index, 26-82 ms in all), and being new,
        Python's young collections walked its 60,000 entries until it aged."""
        ids = list(ids)
        try:
            storage = self.rows_and_matrix
            data, matrix, row_of = storage["data"], storage["matrix"], self._row_of()
            if len(row_of) != len(data) or not matrix.flags.writeable:  # an id on two rows; a read-only load
                return super().delete(ids)
            gone = sorted({row_of[vid] for vid in ids if vid in row_of})
            if not gone:
                return
            # Rows between two removed ones move up by the number removed before them (slices, no copy
            # of the whole matrix or list).
            first, bounds, tail = gone[0], gone[1:] + [len(data)], []
            end = first
            for row, following in zip(gone, bounds):
                size = following - row - 1
                matrix[end:end + size] = matrix[row + 1:following]
                tail.extend(data[row + 1:following])
                end += size
            for row in gone:
                del row_of[data[row][f_ID]]
            data[first:] = tail
            row_of.update(zip([row[f_ID] for row in tail], range(first, len(data))))
            self._prism_rows = (data, len(data), row_of)
            storage["matrix"] = matrix[:end]
        finally:
            journal.touch(self.storage_file, ids)


_STORED_DIM = re.compile(rb'\A\s*\{\s*"embedding_dim"\s*:\s*(\d+)')


def check_stored_dimension(file_name: str, dim: int) -> None:
    """Fail as nano-vectordb's load does (the same ``AssertionError``, which ``PrismRAG`` names) when the file's
    vectors have another dimension than ``dim``: the file is read on first use, and a wrong embedder must still be
    named when the storage is made. Reads the file's first bytes (nano-vectordb and this module write
    ``embedding_dim`` first); a file written otherwise is checked when read."""
    try:
        with open(file_name, "rb") as handle:
            found = _STORED_DIM.match(handle.read(64))
    except FileNotFoundError:
        return
    if found is not None and int(found[1]) != dim:
        raise AssertionError(f"Embedding dim mismatch, expected: {dim}, but loaded: {int(found[1])}")


class PrismNanoVectorDBStorage(NanoVectorDBStorage):
    """LightRAG's NanoVectorDB storage whose client is a :class:`JournaledNanoVectorDB`, read from its file when
    first used rather than when the storage is made: a process that never reads a store does not hold it (the
    relation vectors, matrix and rows, in a process that answers ``prism`` and ``hipporag`` queries: 337 MB at
    9,222 passages)."""

    def __post_init__(self):
        """LightRAG 1.5.7's ``NanoVectorDBStorage.__post_init__`` without reading the file (see :attr:`_client`).
        ``tests/storages/test_lazy_vector_store.py`` checks that it sets what LightRAG's sets."""
        validate_workspace(self.workspace)
        self._validate_embedding_func()
        self._load_lock = threading.Lock()
        self._client = _NOT_READ
        self._storage_lock = None
        self.storage_updated = None
        kwargs = self.global_config.get("vector_db_storage_cls_kwargs", {})
        cosine_threshold = kwargs.get("cosine_better_than_threshold")
        if cosine_threshold is None:
            raise ValueError("cosine_better_than_threshold must be specified in vector_db_storage_cls_kwargs")
        self.cosine_better_than_threshold = cosine_threshold
        workspace_dir = self.global_config["working_dir"]
        if self.workspace:
            workspace_dir = os.path.join(workspace_dir, self.workspace)
            self.final_namespace = f"{self.workspace}_{self.namespace}"
        else:
            self.final_namespace = self.namespace
            self.workspace = ""
        os.makedirs(workspace_dir, exist_ok=True)
        self._client_file_name = os.path.join(workspace_dir, f"vdb_{self.namespace}.json")
        self._max_batch_size = self.global_config["embedding_batch_num"]
        reap_orphan_tmp_files(self._client_file_name, self.workspace or "_")
        check_stored_dimension(self._client_file_name, self.embedding_func.embedding_dim)
        self._pending_upserts = {}
        self._pending_deletes = set()
        self._unsaved_deletes = {}
        self._client_dirty = False
        self._unsaved_upserts = {}

    @property
    def _client(self) -> NanoVectorDB:
        """LightRAG's client attribute, read from the file (and its journal) on first use."""
        client = self.__dict__["_prism_client"]
        return self._read_client() if client is _NOT_READ else client

    @_client.setter
    def _client(self, client) -> None:
        self.__dict__["_prism_client"] = client

    @property
    def client_read(self) -> bool:
        """Whether the client is in memory (tools, tests)."""
        return self.__dict__["_prism_client"] is not _NOT_READ

    def _read_client(self) -> NanoVectorDB:
        """Read the client once (the event loop, or a thread from :meth:`_get_client`: whichever comes first)."""
        with self._load_lock:
            client = self.__dict__["_prism_client"]
            if client is _NOT_READ:
                if self.storage_updated is not None:  # before the read: a write after it flags it again
                    self.storage_updated.value = False
                client = JournaledNanoVectorDB.adopt(
                    NanoVectorDB(self.embedding_func.embedding_dim, storage_file=self._client_file_name))
                state = journal.registered(self._client_file_name)
                if state is not None:
                    journal.adopt(state, client.rows_kind, client.rows_and_matrix)
                self.__dict__["_prism_client"] = client
            return client

    def _shared_state(self) -> journal.FileState | None:
        """The file's journal state when other processes write it too (LightRAG's multi-process mode)."""
        state = journal.registered(self._client_file_name)
        return state if state is not None and state.across_processes else None

    def _reload_client_from_disk_locked(self, *, for_write: bool = False) -> bool:
        """LightRAG's reload after another process wrote, by applying what it appended to the journal when it can
        (``journal.catch_up``: milliseconds, against 3 s to read the entity store of the 9,000-passage bench index
        whole). A client not read yet is read as the file is when first used: nothing to reload."""
        if not self.client_read:
            if self.storage_updated is not None:
                self.storage_updated.value = False
            return False
        state = self._shared_state()
        if state is not None and self.storage_updated.value and self._reload_from_journal(state):
            return True
        reloaded = super()._reload_client_from_disk_locked(for_write=for_write)
        if reloaded:
            JournaledNanoVectorDB.adopt(self._client)
            if state is not None:
                journal.note_reloaded(state)
        return reloaded

    async def _get_client(self):
        """LightRAG's ``_get_client``; when another process wrote and its appends cannot be applied, the file is
        read whole in a thread rather than on the event loop."""
        if not self.client_read:
            async with self._storage_lock:
                await asyncio.to_thread(self._read_client)
        state = self._shared_state()
        if state is not None and self.storage_updated.value:
            async with self._storage_lock:
                if self.storage_updated.value and not self._reload_from_journal(state):
                    file_name, dim = self._client_file_name, self.embedding_func.embedding_dim
                    self._client = await asyncio.to_thread(
                        lambda: JournaledNanoVectorDB.adopt(NanoVectorDB(dim, storage_file=file_name)))
                    self.storage_updated.value = False
                    journal.note_reloaded(state)
        return await super()._get_client()

    def _reload_from_journal(self, state: journal.FileState) -> bool:
        client = self._client
        if journal.catch_up(state, client.rows_kind, client.rows_and_matrix) is None:
            return False
        self.storage_updated.value = False
        return True

    async def drop(self) -> dict[str, str]:
        journal.remove_journal(self._client_file_name)  # before the new empty client loads (nothing to replay)
        result = await super().drop()
        JournaledNanoVectorDB.adopt(self._client)
        return result

    async def _save_to_disk_locked(self, on_committed) -> None:
        """Append the changed rows to the journal when the file is journaled, else LightRAG's whole save (which
        makes any journal stale: it is removed once the save landed)."""
        from lightrag.file_atomic import atomic_write
        from lightrag.utils import commit_in_storage_io

        file_name, client = self._client_file_name, self._client
        state = journal.registered(file_name)
        if state is None:
            async def committed():
                journal.remove_journal(file_name)  # the base now holds everything
                await on_committed()
            return await super()._save_to_disk_locked(committed)

        def whole() -> None:
            def save_to(tmp: str) -> None:
                path, client.storage_file = client.storage_file, tmp
                try:
                    client.save()
                finally:
                    client.storage_file = path

            atomic_write(file_name, save_to, self.workspace or "_")

        # the flush finds the changed rows through the store's id -> row index (held current under the storage
        # lock, which this save holds) instead of a pass over every row
        kind = JournaledNanoVectorDB.rows_kind.with_index(client.current_row_index)
        await commit_in_storage_io(partial(journal.flush, state, kind, client.rows_and_matrix, whole),
                                   on_committed)
