"""``JsonDocStatusStorage`` as PrismRAG runs it: journaled (``json_stores.py``), its lookups by content hash and by
file path answered from an index (``doc_status_index.py``) instead of a scan of every document."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from lightrag.kg.json_doc_status_impl import JsonDocStatusStorage

from lightrag_prism import journal

from .doc_status_index import index_of, note_write
from .json_stores import JournaledJsonStore, named_keys


class PrismJsonDocStatusStorage(JournaledJsonStore, JsonDocStatusStorage):
    """LightRAG's JSON doc-status store: journaled flushes; writes note their ids for the journal and the index;
    the four lookups give what LightRAG's scan gives (``tests/foundation/test_doc_status_index.py``)."""

    journal_kind = journal.DocStatusKind

    def _after_load(self) -> None:
        index_of(self).invalidate()  # a load and its update of the shared dict are apart (an await between)

    @contextlib.contextmanager
    def _writing(self, ids):
        with note_write(self, ids), super()._writing(ids):
            yield

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        with self._writing(named_keys(data)):
            return await super().upsert(data)

    async def update_doc_status_fields(self, doc_id: str, fields: dict[str, Any], *, missing_ok: bool = False):
        with self._writing([doc_id]):
            return await super().update_doc_status_fields(doc_id, fields, missing_ok=missing_ok)

    async def delete(self, doc_ids: list[str]) -> None:
        with self._writing(named_keys(doc_ids)):
            return await super().delete(doc_ids)

    async def repair_source_conflict(self, canonical_source_key: str, **kwargs):
        with self._writing(None):  # the rows it demotes are not named by its arguments
            return await super().repair_source_conflict(canonical_source_key, **kwargs)

    # --- lookups ---

    async def get_doc_by_content_hash(self, content_hash: str, *, exclude_doc_id: str | None = None):
        """LightRAG's answer: of the rows with this hash (minus the excluded one and its duplicate markers), the
        earliest by ``(created_at, id)``."""
        if content_hash and self._storage_lock is not None:
            async with self._storage_lock:
                index = index_of(self).current(self._data)
                if index is not None:
                    best = None
                    for doc_id in index.by_hash.get(content_hash, ()):
                        row = self._data.get(doc_id)
                        if (doc_id == exclude_doc_id or self._row_points_at_as_duplicate(row, exclude_doc_id)
                                or not isinstance(row, dict) or row.get("content_hash") != content_hash):
                            continue
                        key = self._row_sort_key(doc_id, row)
                        if best is None or key < best[0]:
                            best = (key, doc_id, row)
                    return None if best is None else (best[1], copy.deepcopy(best[2]))
        return await super().get_doc_by_content_hash(content_hash, exclude_doc_id=exclude_doc_id)

    async def get_doc_by_file_basename(self, basename: str):
        if basename == "unknown_source":
            return await super().get_doc_by_file_basename(basename)
        rows = await self._path_rows(basename, primary_only=True, first=1)
        if rows is None:
            return await super().get_doc_by_file_basename(basename)
        return rows[0] if rows else None

    async def get_doc_by_file_path(self, file_path: str):
        rows = await self._path_rows(file_path, primary_only=False, first=1)
        if rows is None:
            return await super().get_doc_by_file_path(file_path)
        return rows[0][1] if rows else None

    async def resolve_doc_source_strict(self, canonical_source_key: str):
        from lightrag.base import SourceAbsent, SourceConflict, SourceUnique

        rows = None
        if canonical_source_key != "unknown_source":
            rows = await self._path_rows(canonical_source_key, primary_only=True, first=2)
        if rows is None:
            return await super().resolve_doc_source_strict(canonical_source_key)
        if not rows:
            return SourceAbsent()
        if len(rows) == 1:
            doc_id, row = rows[0]
            return SourceUnique(doc_id=doc_id, doc=self._scheduling_record_from_raw(doc_id, row))
        # LightRAG stops at the second candidate: its sample is the first two in dict order
        return SourceConflict(candidate_count=None, sample_doc_ids=tuple(sorted(doc_id for doc_id, _ in rows)))

    async def _path_rows(self, path: str, primary_only: bool, first: int) -> list[tuple[str, dict]] | None:
        """Copies of the first ``first`` rows with ``file_path == path`` (not duplicate markers, if
        ``primary_only``) in ``_data``'s order, as LightRAG's scan meets them; None when the index cannot answer."""
        if not path or self._storage_lock is None:
            return None
        async with self._storage_lock:
            index = index_of(self).current(self._data)
            if index is None:
                return None
            rows = ((doc_id, self._data.get(doc_id)) for doc_id in index.by_path.get(path, ()))
            rows = [(doc_id, row) for doc_id, row in rows if isinstance(row, dict) and row.get("file_path") == path
                    and not (primary_only and self._is_duplicate_row(row))]
            if len(rows) > first:  # several rows share the path: their order in the dict decides
                order = {doc_id: i for i, doc_id in enumerate(self._data)}
                rows = sorted(rows, key=lambda item: order[item[0]])
            return [(doc_id, copy.deepcopy(row)) for doc_id, row in rows[:first]]

    async def processed_chunk_lists(self, processed: str) -> list[str]:
        """The ``chunks_list`` entries of every document whose status is ``processed``, in the store's order (what
        ``get_docs_by_statuses([PROCESSED])`` gives), read without its deep copies. In LightRAG's multi-process
        mode (the manager's dict) from one copy of the dict, in a thread: ``get_docs_by_statuses`` copied it on the
        event loop and built a status object per document (9,000 after every upload to another worker)."""
        data = self._data
        if type(data) is dict:
            return _processed_chunks(data, processed)
        return await asyncio.to_thread(lambda: _processed_chunks(data.copy(), processed))


def _processed_chunks(data: dict, processed: str) -> list[str]:
    chunks: list[str] = []
    for row in data.values():
        if isinstance(row, dict) and row.get("status") == processed:
            chunks.extend(row.get("chunks_list") or [])
    return chunks
