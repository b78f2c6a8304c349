"""Move the state files earlier versions kept in the working dir into the plugin's KV namespaces (first start).

A file is copied only when its record does not exist yet, then renamed ``<name>.migrated`` (kept, not deleted:
a user can still go back to an older version by renaming it). A JSON file that cannot be read stops the start
with its path, as the merge log always did: dropping it could lose merges that a crash left pending.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np

from ..plugin_state import PluginState

logger = logging.getLogger(__name__)

# file written by lightrag_prism before 0.2 -> the document holding it now
LEGACY_DOCUMENTS = {
    "prism_merge_log.json": "merge_log",
    "prism_merge_plans.json": "merge_plans",
    "prism_entity_aliases.json": "aliases",
    "prism_doc_timestamps.json": "doc_timestamps",
    "prism_entity_types.json": "entity_types",
}
LEGACY_INDEXES = ("hipporag_entity_names", "hipporag_facts")  # <name>.npz (matrix) + <name>.json (ids)


def storage_dir(rag) -> Path:
    """The folder LightRAG's JSON storages use: ``working_dir/workspace`` when a workspace is set."""
    workspace = getattr(rag, "workspace", "") or ""
    return Path(rag.working_dir) / workspace if workspace else Path(rag.working_dir)


def _retire(path: Path) -> None:
    os.replace(path, path.with_name(path.name + ".migrated"))


async def _migrate_document(state: PluginState, path: Path, name: str) -> bool:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot migrate {path} into the plugin state ({exc}); fix or move it away") from exc
    document = state.document(name)
    if await document.load(None) is None:
        await document.save(value)
    _retire(path)
    return True


async def _migrate_index(state: PluginState, folder: Path, name: str) -> bool:
    npz, ids_file = folder / f"{name}.npz", folder / f"{name}.json"
    try:
        ids = json.loads(ids_file.read_text(encoding="utf-8"))
        matrix = np.load(npz)["vectors"]
    except (OSError, ValueError, KeyError) as exc:  # vectors are a cache: re-embedded if unreadable
        logger.warning("not migrating unreadable index %s (%s); its vectors will be re-embedded", npz, exc)
        return False
    if isinstance(ids, list) and matrix.ndim == 2 and len(ids) == matrix.shape[0]:
        await state.vectors.update(name, dict(zip(map(str, ids), matrix.astype(np.float32))))
    _retire(npz)
    _retire(ids_file)
    return True


async def migrate_state_files(rag, state: PluginState) -> list[str]:
    """Move every legacy file found in the instance's storage folder; returns the names moved."""
    folder, moved = storage_dir(rag), []
    for filename, name in LEGACY_DOCUMENTS.items():
        if (folder / filename).is_file() and await _migrate_document(state, folder / filename, name):
            moved.append(filename)
    for name in LEGACY_INDEXES:
        if (folder / f"{name}.npz").is_file() and (folder / f"{name}.json").is_file():
            if await _migrate_index(state, folder, name):
                moved.append(f"{name}.npz")
    if moved:
        logger.info("moved %s from %s into the %s storage", ", ".join(moved), folder, rag.kv_storage)
    return moved
