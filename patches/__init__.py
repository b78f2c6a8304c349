"""The only code in lightrag_prism that touches LightRAG private symbols.

LightRAG 1.5.7 has no hook in its query pipeline: each stage is a module global looked up at call time. We wrap two
of them, once, at import:

* ``lightrag.operate._perform_kg_search`` (stage 1 of local/global/hybrid/mix) so a lightrag_prism mode can replace
  or augment the raw entities/relations/chunks while LightRAG keeps doing truncation, chunk merging, context
  building, caching and the answer call;
* ``lightrag.operate._get_vector_context`` (the retrieval step of ``naive_query``) so passage-ranking modes answer
  through LightRAG's naive path.

Both wrappers are inert unless :data:`ACTIVE_HOOKS` holds a hooks object, which only ``PrismRAG`` sets, for the
duration of one query: plain ``LightRAG`` instances in the same process are unaffected.

What else is replaced at import, each inert for plain LightRAG instances and listed in the symbol registry
(``tests/foundation/test_replaced_symbols.py`` compares the two): ``lightrag.lightrag.get_storage_class``
(``storage_classes.py``: PrismRAG's storage classes while a PrismRAG is built), three insert-time stages
(``insert_hooks.py``) and LightRAG's extraction-text normalisers, memoised during a PrismRAG's inserts and deletions
(``normalize_memo.py``: the same strings out). Nothing of LightRAG's storage layer (``lightrag.kg.*``,
nano-vectordb) is replaced: PrismRAG's file storages are subclasses (``lightrag_prism/storages/``); the PostgreSQL
client's two repairs (``postgres.py``) are installed when a PrismRAG on PostgreSQL is built.

At import we check the installed lightrag-hku version and the presence and parameter count of every private symbol
used anywhere in the plugin, and fail with one clear message otherwise.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from typing import Any, Protocol

from .private import (  # noqa: F401  (re-exported: patches.check_lightrag, patches.PRIVATE_SYMBOLS, ...)
    ACTIVE_SEAM, PRIVATE_SYMBOLS, SUPPORTED_RANGE, UnsupportedLightRAGVersion, build_global_config, check_lightrag,
    check_symbol, redis_client, seam_active, wrap_once)


class QueryHooks(Protocol):
    async def kg_search(self, original, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def vector_context(self, original, arguments: dict[str, Any]) -> list[dict]: ...


ACTIVE_HOOKS: ContextVar[QueryHooks | None] = ContextVar("lightrag_prism_query_hooks", default=None)


def _named_arguments(func, args, kwargs) -> dict[str, Any]:
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _hooked(original, hook_name: str):
    async def wrapper(*args, **kwargs):
        hooks = ACTIVE_HOOKS.get()
        if hooks is None:
            return await original(*args, **kwargs)

        async def call_original(arguments: dict[str, Any]):
            return await original(**arguments)

        return await getattr(hooks, hook_name)(call_original, _named_arguments(original, args, kwargs))

    return wrapper


def install() -> None:
    """Check the LightRAG version and wrap the query-pipeline stages (idempotent)."""
    check_lightrag()
    from lightrag import operate

    wrap_once(operate, "_perform_kg_search", lambda original: _hooked(original, "kg_search"))
    wrap_once(operate, "_get_vector_context", lambda original: _hooked(original, "vector_context"))


install()

from . import insert_hooks  # noqa: E402,F401  (insert-time hooks: private symbols listed there)
from . import storage_classes  # noqa: E402,F401  (PrismRAG's storage classes: lightrag_prism/storages/)
from . import postgres  # noqa: E402,F401  (repairs of LightRAG's PostgreSQL client, installed on use)
from . import normalize_memo  # noqa: E402,F401  (LightRAG's extraction-text normalisers memoised: same strings out)
