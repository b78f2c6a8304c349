"""Description merging for PrismRAG instances (installed around LightRAG's ``_handle_entity_relation_summary``).

**Without an LLM** (the offline stand-in), a description is the most informative distinct fragments within
``offline_summary_max_tokens`` (:mod:`.extraction.bounded_summary`), chronological first when fragments carry
timestamps; nothing is sent to the stand-in and nothing grows without bound.

**With an LLM and** ``timestamp_aware_summaries=True``, for an entity or relation whose description fragments carry
``[Time: ts]`` markers:

1. fragments are put in chronological order (untimed ones last), so a plain ``<SEP>`` join is chronological;
2. when LightRAG decides to summarise with the LLM, the summary prompt gets :data:`TIMESTAMP_SUMMARY_INSTRUCTION`
   (inserted as an extra instruction before ``---Input---``);
3. the summary is verified: every timestamp of the input must survive as a ``[Time: ts]`` marker. If one is
   missing, the summary is discarded and the fragments are concatenated deterministically (chronological,
   deduplicated). The fallback is logged and counted in :data:`SUMMARY_STATS`.

Other configs get LightRAG's own summary. Plain LightRAG instances never reach this hook: it is called through a
PrismRAG's seam (``seam.py``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from lightrag.utils import sanitize_text_for_encoding

from .. import patches
from .extraction.bounded_summary import select_fragments
from .timestamps.markers import (
    TIMESTAMP_SUMMARY_INSTRUCTION,
    deterministic_concat,
    extract_timestamps,
    order_fragments_chronologically,
    verify_timestamps_kept,
)

logger = logging.getLogger(__name__)

#: Process-wide counters: ``ordered`` (timed merges), ``llm_verified``, ``llm_fallback``, ``offline_bounded``
#: (offline merges that dropped fragments to stay within the budget).
SUMMARY_STATS: Counter = Counter()
_INPUT_MARKER = "---Input---"


def with_timestamp_instruction(prompt: str) -> str:
    """The summary prompt with the timestamp instruction added before its input section."""
    if TIMESTAMP_SUMMARY_INSTRUCTION in prompt:
        return prompt
    if _INPUT_MARKER in prompt:
        return prompt.replace(_INPUT_MARKER, f"{TIMESTAMP_SUMMARY_INSTRUCTION}\n\n{_INPUT_MARKER}", 1)
    return f"{prompt}\n\n{TIMESTAMP_SUMMARY_INSTRUCTION}"


def _instructed_config(global_config: dict[str, Any]) -> dict[str, Any]:
    config = dict(global_config)
    role_funcs = dict(config.get("role_llm_funcs") or {})
    extract = role_funcs.get("extract")
    if extract is None:
        return config

    async def extract_with_instruction(prompt, *args, **kwargs):
        return await extract(with_timestamp_instruction(prompt), *args, **kwargs)

    role_funcs["extract"] = extract_with_instruction
    config["role_llm_funcs"] = role_funcs
    return config


async def timestamp_aware_summary(original, arguments: dict[str, Any]) -> tuple[str, bool]:
    fragments = list(arguments["description_list"])
    if not any(extract_timestamps(f) for f in fragments):
        return await original(**arguments)
    SUMMARY_STATS["ordered"] += 1
    ordered = order_fragments_chronologically(fragments)
    call = dict(arguments, description_list=ordered, global_config=_instructed_config(arguments["global_config"]))
    text, llm_used = await original(**call)
    if not llm_used:
        return text, llm_used
    missing = verify_timestamps_kept(ordered, text)
    if not missing:
        SUMMARY_STATS["llm_verified"] += 1
        return text, llm_used
    SUMMARY_STATS["llm_fallback"] += 1
    logger.warning("summary of %s %r dropped timestamp(s) %s: falling back to chronological concatenation",
                   arguments.get("description_type"), arguments.get("entity_or_relation_name"), missing)
    return deterministic_concat(ordered, arguments["separator"]), llm_used


def offline_config(global_config: dict[str, Any]) -> bool:
    return bool(getattr(global_config.get("llm_model_func"), "is_offline_stand_in", False))


def offline_budget(global_config: dict[str, Any]) -> int:
    """Tokens an offline description may use: ``offline_summary_max_tokens``, within LightRAG's summary limit."""
    budget = int(global_config.get("offline_summary_max_tokens") or 0) or int(global_config["summary_max_tokens"])
    return max(1, min(budget, int(global_config["summary_max_tokens"])))


def bounded_summary(arguments: dict[str, Any]) -> tuple[str, bool]:
    config = arguments["global_config"]
    fragments = list(arguments["description_list"])
    if config.get(patches.insert_hooks.SUMMARY_FLAG) and any(extract_timestamps(f) for f in fragments):
        fragments = order_fragments_chronologically(fragments)
    tokenizer, separator = config["tokenizer"], arguments["separator"]
    kept = select_fragments(fragments, offline_budget(config), lambda text: len(tokenizer.encode(text)),
                            separator_tokens=len(tokenizer.encode(separator)))
    if len(kept) < len(fragments):
        SUMMARY_STATS["offline_bounded"] += 1
    return sanitize_text_for_encoding(separator.join(kept)), False


async def prism_summary(original, arguments: dict[str, Any]) -> tuple[str, bool]:
    config = arguments["global_config"]
    if offline_config(config):
        return bounded_summary(arguments)
    if config.get(patches.insert_hooks.SUMMARY_FLAG):
        return await timestamp_aware_summary(original, arguments)
    return await original(**arguments)

