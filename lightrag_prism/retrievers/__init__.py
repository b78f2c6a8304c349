"""The mode registry: the one place where lightrag_prism query modes are declared.

Each entry maps a mode name to its subpackage (``retrievers/<mode>/``: the mode's stages as modules, the entry
point in ``mode.py``). A mode package exposes

* ``KIND``: ``"kg"`` (entities, relations and chunks; answered through LightRAG's ``kg_query`` path) or
  ``"chunks"`` (ranked passages only; answered through LightRAG's ``naive_query`` path);
* ``async def retrieve(ctx: QueryContext) -> Retrieval``;
* optionally ``OWN_CHUNK_RANKING = True`` (a ``"kg"`` mode whose chunk order LightRAG must keep: its entities and
  relations reach LightRAG without ``source_id``);
* optionally ``reads_keywords(param) -> bool`` (a ``"kg"`` mode; default True): whether the query reads LightRAG's
  ll/hl keywords. When it does not, no LLM is asked for them: LightRAG's ``kg_query`` gets the offline extractor's.

Modules are imported lazily, on first use of their mode.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..param import STOCK_MODES

MODE_MODULES: dict[str, str] = {
    "ensemble": "lightrag_prism.retrievers.ensemble",
    "fidelis": "lightrag_prism.retrievers.fidelis",
    "hipporag": "lightrag_prism.retrievers.hipporag",
    "prism": "lightrag_prism.retrievers.prism",
    "tournament": "lightrag_prism.retrievers.tournament",
}


def registered_modes() -> list[str]:
    return sorted(MODE_MODULES)


def valid_modes() -> list[str]:
    return sorted(set(STOCK_MODES) | set(MODE_MODULES))


def check_mode(mode: str) -> None:
    if mode not in STOCK_MODES and mode not in MODE_MODULES:
        raise ValueError(f"Unknown query mode {mode!r}. Valid modes: {', '.join(valid_modes())}")


def mode_module(mode: str) -> ModuleType:
    check_mode(mode)
    return importlib.import_module(MODE_MODULES[mode])
