"""The registry of LightRAG private symbols the plugin uses, the version check, and the helpers every patch module
shares (``check_symbol``, ``wrap_once``). Patch modules import from here, never from the package ``__init__``,
so the package imports them without a cycle.
"""

from __future__ import annotations

import importlib
import inspect
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import Any

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


def register_symbols(*symbols: tuple[str, str, int]) -> None:
    """List each ``(module, path, n_params)`` a patch module relies on in :data:`PRIVATE_SYMBOLS` and check it
    against the installed LightRAG now (at the module's import, or when a patch is installed on use)."""
    for symbol in symbols:
        check_symbol(*symbol)
        if symbol not in PRIVATE_SYMBOLS:
            PRIVATE_SYMBOLS.append(symbol)


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


# The PrismSeam (``lightrag_prism/seam.py``) whose insert or deletion is running in this task and the tasks it
# starts: the wrappers of stages that get no config (the extraction-text normalisers) serve only those.
ACTIVE_SEAM: ContextVar[Any] = ContextVar("lightrag_prism_active_seam", default=None)


@contextmanager
def seam_active(seam):
    token = ACTIVE_SEAM.set(seam)
    try:
        yield
    finally:
        ACTIVE_SEAM.reset(token)


# --- private LightRAG methods used by PrismRAG, behind small named functions ---
PRIVATE_SYMBOLS.append(("lightrag.lightrag", "LightRAG._build_global_config", 1))


def build_global_config(rag) -> dict[str, Any]:
    """The config dict LightRAG's query functions take (``LightRAG._build_global_config``)."""
    return rag._build_global_config()


def redis_client(store):
    """The ``redis.asyncio`` client of an initialized ``RedisKVStorage`` (its private ``_redis``): the plugin's
    shared lock lives in the same Redis as the storage, whatever URI or config file chose it."""
    client = getattr(store, "_redis", None)
    if client is None:
        _fail(f"but {type(store).__name__} has no _redis client (the shared lock on Redis needs it); "
              "or the storage is not initialized")
    return client
