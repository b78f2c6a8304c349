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

At import we check the installed lightrag-hku version and the presence and parameter count of every private symbol
used anywhere in the plugin, and fail with one clear message otherwise.
"""

from __future__ import annotations

import importlib
import inspect
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

from packaging.version import Version

SUPPORTED_RANGE = ">=1.5.7,<1.6"
_MIN, _MAX = Version("1.5.7"), Version("1.6")

# (module, attribute path, number of parameters). Every private LightRAG symbol the plugin uses is listed here.
PRIVATE_SYMBOLS: list[tuple[str, str, int]] = [
    ("lightrag.operate", "_perform_kg_search", 10),
    ("lightrag.operate", "_get_vector_context", 4),
    ("lightrag.operate", "kg_query", 11),
    ("lightrag.operate", "naive_query", 8),
]


class UnsupportedLightRAGVersion(ImportError):
    pass


def _fail(reason: str) -> None:
    raise UnsupportedLightRAGVersion(
        f"lightrag_prism supports lightrag-hku {SUPPORTED_RANGE}; {reason}. "
        f"Install a supported version: pip install 'lightrag-hku{SUPPORTED_RANGE}'"
    )


def check_lightrag() -> None:
    """Fail with one clear message unless the installed LightRAG is one this plugin was written against."""
    try:
        installed = Version(version("lightrag-hku"))
    except PackageNotFoundError:
        _fail("lightrag-hku is not installed")
    if not _MIN <= installed < _MAX:
        _fail(f"found {installed}")
    for module_name, path, n_params in PRIVATE_SYMBOLS:
        check_symbol(module_name, path, n_params, installed)


def check_symbol(module_name: str, path: str, n_params: int, installed: Any = None) -> None:
    """Fail clearly unless ``module_name.path`` exists and takes ``n_params`` parameters."""
    installed = installed or version("lightrag-hku")
    target: Any = importlib.import_module(module_name)
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            _fail(f"found {installed}, but {module_name}.{path} is missing")
    found = len(inspect.signature(getattr(target, "__wrapped__", target)).parameters)
    if found != n_params:
        _fail(f"found {installed}, but {module_name}.{path} takes {found} parameters, expected {n_params}")


class QueryHooks(Protocol):
    async def kg_search(self, original, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def vector_context(self, original, arguments: dict[str, Any]) -> list[dict]: ...


ACTIVE_HOOKS: ContextVar[QueryHooks | None] = ContextVar("lightrag_prism_query_hooks", default=None)


def _named_arguments(func, args, kwargs) -> dict[str, Any]:
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def wrap_once(module, name: str, make_wrapper) -> None:
    """Replace ``module.name`` by ``make_wrapper(original)`` unless it is already our wrapper (idempotent)."""
    original = getattr(module, name)
    if getattr(original, "_lightrag_prism_wrapped", False):
        return
    wrapper = make_wrapper(original)
    wrapper.__wrapped__ = original
    wrapper.__name__ = name
    wrapper._lightrag_prism_wrapped = True
    setattr(module, name, wrapper)


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



# --- private LightRAG methods used by PrismRAG, behind small named functions ---
PRIVATE_SYMBOLS.append(("lightrag.lightrag", "LightRAG._build_global_config", 1))


def build_global_config(rag) -> dict[str, Any]:
    """The config dict LightRAG's query functions take (``LightRAG._build_global_config``)."""
    return rag._build_global_config()


install()

from . import insert_hooks  # noqa: E402,F401  (insert-time hooks: private symbols listed there)
from . import fast_json  # noqa: E402,F401  (orjson for LightRAG's JSON stores: same bytes, faster)
from . import fast_graphml  # noqa: E402,F401  (the graph file written directly: same graph, faster)
