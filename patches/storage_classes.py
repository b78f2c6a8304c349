"""The one place LightRAG chooses storage classes, asked on behalf of a PrismRAG instance while it is built.

``LightRAG.__post_init__`` takes each storage class from ``lightrag.lightrag.get_storage_class(name)`` (a module
global, no hook). It is wrapped once, at import: while :func:`choosing` is active (``PrismRAG.__post_init__``, on
that thread of control only, a ContextVar) the wrapper asks the PrismRAG's chooser first; otherwise, and for every
plain ``LightRAG`` instance, it is LightRAG's function.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

from .private import register_symbols, wrap_once

register_symbols(("lightrag.lightrag", "get_storage_class", 1))

Chooser = Callable[[str], "type | None"]
_CHOOSER: ContextVar[Chooser | None] = ContextVar("lightrag_prism_storage_chooser", default=None)


def _choosing_first(original):
    def get_storage_class(storage_name: str):
        chooser = _CHOOSER.get()
        chosen = chooser(storage_name) if chooser is not None else None
        return chosen if chosen is not None else original(storage_name)

    return get_storage_class


@contextmanager
def choosing(chooser: Chooser):
    """LightRAG's storage classes come from ``chooser`` (None from it: LightRAG's own) inside the block."""
    token = _CHOOSER.set(chooser)
    try:
        yield
    finally:
        _CHOOSER.reset(token)


def install() -> None:
    from lightrag import lightrag

    wrap_once(lightrag, "get_storage_class", _choosing_first)


install()
