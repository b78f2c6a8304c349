"""One helper for every LLM call the plugin makes: through the instance's LLM function, with LightRAG's cache.

The role function ``rag.role_llm_funcs["query"]`` carries LightRAG's concurrency limit (``llm_model_max_async``)
and priority queue; answers are cached in ``rag.llm_response_cache`` under ``{mode}:{cache_type}:{hash}`` with
LightRAG's own ``handle_cache``/``save_to_cache``, so a repeated query asks nothing again.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable

from lightrag.utils import CacheData, compute_args_hash, handle_cache, save_to_cache


async def cached_llm_call(rag, prompt: str, *, system_prompt: str | None = None, cache_type: str = "prism",
                          mode: str = "prism", stats: dict[str, int] | None = None, **kwargs: Any) -> str:
    """Answer ``prompt`` from LightRAG's cache or the instance's query-role LLM.

    ``stats`` (optional) counts ``"cache_hits"`` and ``"llm_calls"`` (requests actually sent to the LLM).
    """
    cache = rag.llm_response_cache
    # Everything that shapes the answer is in the key (history_messages carry few-shot examples, for one).
    extra = json.dumps(kwargs, sort_keys=True, default=str) if kwargs else ""
    args_hash = compute_args_hash(cache_type, system_prompt or "", prompt, rag.llm_model_name or "", extra)
    cached = await handle_cache(cache, args_hash, prompt, mode, cache_type=cache_type)
    if cached is not None:
        if stats is not None:
            stats["cache_hits"] = stats.get("cache_hits", 0) + 1
        return cached[0]
    if stats is not None:
        stats["llm_calls"] = stats.get("llm_calls", 0) + 1
    llm = rag.role_llm_funcs["query"]
    answer = await llm(prompt, system_prompt=system_prompt, **kwargs)
    if not isinstance(answer, str):
        raise TypeError(f"LLM returned {type(answer).__name__}, expected str")
    await save_to_cache(cache, CacheData(args_hash=args_hash, content=answer, prompt=prompt, mode=mode,
                                         cache_type=cache_type))
    return answer


#: Longer LLM answers are not parsed (the parser's fallback applies): every prompt here asks for a short answer,
#: and reading megabytes of it would cost more than the call.
MAX_ANSWER_CHARS = 100_000
#: What a parser may raise on hostile text (deep nesting recurses in ``json``/``ast``); turned into the fallback.
_PARSE_ERRORS = (ValueError, TypeError, RecursionError, MemoryError)


def total_parser(fallback: Any = None) -> Callable:
    """Make an LLM-answer parser total: a non-string, an answer over :data:`MAX_ANSWER_CHARS`, or text that makes
    it raise gives ``fallback`` (callers record the fallback as they do for any unreadable answer)."""

    def wrap(parse: Callable) -> Callable:
        @functools.wraps(parse)
        def parse_total(text: Any, *args: Any, **kwargs: Any) -> Any:
            if text is not None and (not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS):
                return fallback
            try:
                return parse(text, *args, **kwargs)
            except _PARSE_ERRORS:
                return fallback

        return parse_total

    return wrap


_JSON_BLOCK = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@total_parser()
def parse_json_answer(text: str | None) -> Any | None:
    """Parse an LLM answer as JSON: the whole text, a fenced block, then the outermost {...} or [...].

    Returns ``None`` when nothing parses. Never evaluates the text.
    """
    if not text:
        return None
    candidates = [text.strip()] + [m.strip() for m in _JSON_BLOCK.findall(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
            continue
    return None
