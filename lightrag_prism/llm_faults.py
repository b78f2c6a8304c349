"""LLM faults during a query: mark them where they happen, name the endpoint, recognise them where they surface.

PrismRAG wraps its ``llm_model_func`` with :func:`mark_llm_faults`: an exception raised by the LLM call gets the
endpoint attached and is re-raised unchanged (stock modes without fallbacks see LightRAG's own exceptions). A
query that fails recognises the fault with :func:`llm_fault_endpoint`, including LightRAG's own LLM-queue timeouts
(raised outside the wrapper, as ``TimeoutError("<role> LLM func: ...")``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from lightrag.llm_roles import ROLES

from .backends.openai_compat import DEFAULT_BASE_URL
from .errors import connection_refused
from .errors import LLMCallError, describe_error

ENDPOINT_ATTRIBUTE = "prism_llm_endpoint"
LLM_QUEUE_NAMES = tuple(spec.queue_name for spec in ROLES)


def endpoint_of(func: Callable[..., Any]) -> str:
    """What to call the LLM in a message: its endpoint and model when known, else the function's name."""
    base_url, model = getattr(func, "base_url", None), getattr(func, "model_name", None)
    if base_url or model:
        return f"{base_url or DEFAULT_BASE_URL} (model {model!r})"
    return f"llm_model_func {getattr(func, '__qualname__', repr(func))}"


def mark_llm_faults(func: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(func, "marks_llm_faults", False):
        return func
    endpoint = endpoint_of(func)

    @functools.wraps(func)
    async def call(*args, **kwargs):
        try:
            return await func(*args, **kwargs)
        except Exception as exc:
            if getattr(exc, ENDPOINT_ATTRIBUTE, None) is None:
                try:
                    setattr(exc, ENDPOINT_ATTRIBUTE, endpoint)
                except AttributeError:  # an exception type without __dict__: raise as it is
                    pass
            raise

    call.marks_llm_faults = True
    return call


def llm_fault_endpoint(exc: BaseException, default_endpoint: str) -> str | None:
    """The endpoint if ``exc`` is an LLM fault, else None."""
    if getattr(exc, ENDPOINT_ATTRIBUTE, None):
        return getattr(exc, ENDPOINT_ATTRIBUTE)
    if isinstance(exc, TimeoutError) and str(exc).startswith(LLM_QUEUE_NAMES):
        return default_endpoint
    return None


def root_cause(exc: BaseException) -> BaseException:
    """The error behind ``exc``: tenacity's ``RetryError`` wraps the one its last attempt raised."""
    attempt = getattr(exc, "last_attempt", None)
    return (attempt.exception() if attempt is not None else None) or exc


def describe_cause(exc: BaseException) -> str:
    return describe_error(root_cause(exc), connection_detail(exc))


def connection_detail(exc: BaseException) -> str:
    """" (connection refused)" when nothing listens at the endpoint: the client's own text says "Connection error"."""
    return " (connection refused)" if connection_refused(exc) is not None else ""


def call_error(step: str, endpoint: str, exc: BaseException) -> LLMCallError:
    return LLMCallError(step, endpoint, describe_cause(exc))
