"""Document timestamps in the plugin state: one record per document, ``doc_timestamp:<content key>``.

Per record, so that processes inserting at once (replicas, server workers) never overwrite each other's
timestamps: a save is one upsert of new records, never a read-modify-write. Any process may chunk a document
another one enqueued (a pipeline on shared storages takes every pending document), so the chunker looks up a
timestamp it does not hold in memory (:func:`lookup`), once the storages are known to hold timestamps at all
(the ``doc_timestamps_used`` record): an instance that never used timestamps pays nothing.
Earlier versions kept one ``doc_timestamps`` map; it is still read.
"""

from __future__ import annotations

from ...plugin_state import PluginState

LEGACY_DOCUMENT = "doc_timestamps"  # one map of every timestamp (before per-record storage)
USED_DOCUMENT = "doc_timestamps_used"
PREFIX = "doc_timestamp:"


def record_name(key: str) -> str:
    return PREFIX + key


async def save(state: PluginState, stamps: dict[str, str]) -> None:
    """Store content key -> timestamp, one record each, in one write."""
    if stamps:
        await state.save_documents({USED_DOCUMENT: True, **{record_name(k): ts for k, ts in stamps.items()}})


async def in_use(state: PluginState) -> bool:
    return bool(await state.document(USED_DOCUMENT).load(False)) or bool(
        await state.document(LEGACY_DOCUMENT).load({}))


async def load_legacy(state: PluginState) -> dict[str, str]:
    return await state.document(LEGACY_DOCUMENT).load({})


async def lookup(state: PluginState, key: str) -> str | None:
    value = await state.document(record_name(key)).load(None)
    return value if isinstance(value, str) else None
