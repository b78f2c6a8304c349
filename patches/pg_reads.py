"""Read-only fast path over LightRAG's PostgreSQL doc-status store, for the views a query reads after every change.

The passage view lists the chunks of every processed document (the chunks no entity references are passages too).
``PGDocStatusStorage.get_docs_by_statuses`` selects every column of every processed document and decodes each row
(chunk list, metadata, timestamps): about 70 ms at 3,000 documents, paid by the first query after each change.
:func:`processed_chunk_lists` selects only ``chunks_list``, decoded as LightRAG decodes it.

Private coupling: the storage's ``db.query`` and its table ``LIGHTRAG_DOC_STATUS`` (LightRAG 1.5.7's schema). Not
registered with the import-time symbol check, which would import ``postgres_impl`` (and asyncpg) for every user:
it returns None for any other backend, and on any error, after which the caller takes the public API.
"""

from __future__ import annotations

import json
import logging

logger = logging.getLogger(__name__)

SQL = "SELECT chunks_list FROM LIGHTRAG_DOC_STATUS WHERE workspace=$1 AND status=$2"


async def processed_chunk_lists(doc_status, processed: str) -> list[str] | None:
    """The ``chunks_list`` entries of every document whose status is ``processed`` (what
    ``get_docs_by_statuses([PROCESSED])`` gives); None unless ``doc_status`` is a ``PGDocStatusStorage``."""
    cls = type(doc_status)
    if cls.__name__ != "PGDocStatusStorage" or cls.__module__ != "lightrag.kg.postgres_impl":
        return None
    try:
        rows = await doc_status.db.query(SQL, [doc_status.workspace, processed], multirows=True)
    except Exception as exc:  # noqa: BLE001 - a schema this does not know: LightRAG's own read still works
        logger.warning("reading chunk lists from PostgreSQL directly failed (%s); using get_docs_by_statuses", exc)
        return None
    chunks: list[str] = []
    for row in rows or []:
        value = row.get("chunks_list") or []
        if isinstance(value, str):  # as postgres_impl decodes it
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = []
        chunks.extend(value)
    return chunks
