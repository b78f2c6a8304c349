"""Adaptive entity types: ask the LLM for domain-specific types from samples of the corpus.

``await discover_entity_types(rag, texts, force_refresh)``:

1. every text is keyed by its content hash; texts analysed before are skipped unless ``force_refresh``;
2. each new text is cut into token windows and at most ``entity_type_samples_per_text`` windows (evenly spaced)
   are sent, one prompt each, through :func:`lightrag_prism.llm.cached_llm_call` (the instance LLM and cache);
3. answers are parsed as JSON ``{"entity_types": [{"name", "explanation"}]}`` (tolerant; garbage is skipped
   and counted); names are sanitised (LightRAG rejects types with ``'()<>|/\\``), counted across samples, and the
   most frequent ones not already among the base types are kept (at most ``entity_type_max_new``);
4. the guidance string (LightRAG 1.5.7's ``addon_params["entity_types_guidance"]``, the format of
   ``PROMPTS["default_entity_types_guidance"]``: an instruction line, then ``- Type: explanation`` lines) is the
   base guidance plus the discovered lines: base types are never dropped;
5. the state is saved to the ``entity_types`` record of the plugin state and reloaded by a new instance.

Without an LLM nothing is asked: the base types stay and the result says ``fallback: "no LLM configured"``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from lightrag.prompt import PROMPTS

from ...llm import cached_llm_call, parse_json_answer, total_parser
from ...plugin_state import plugin_state

logger = logging.getLogger(__name__)

STATE_DOCUMENT = "entity_types"
FOLDER_SUFFIXES = (".txt", ".md")
WINDOW_TOKENS = 1200

TYPE_PROMPT = """You are designing the entity types of a knowledge graph for the documents below.
Current entity types (keep them; do not repeat them):
{current}

Read the excerpt and propose up to {max_new} additional entity types that are specific to this domain and that
the current types would misclassify (e.g. financial metrics such as EPS or Operating Margin in earnings reports).
Each type name is one CamelCase word or short phrase without punctuation. Explain each in one sentence.

Answer with JSON only: {{"entity_types": [{{"name": "...", "explanation": "..."}}]}}

---Excerpt---
{excerpt}
"""

_LINE_RE = re.compile(r"^[ \t]*-[ \t]*([^:\n]+?)[ \t]*:[ \t]*(.*)$", re.M)  # [ \t]: see ensemble._LIST_LINE
_BAD_CHARS = re.compile(r"[^0-9A-Za-z _-]")


def content_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def guidance_types(guidance: str) -> dict[str, str]:
    """``{lower-cased name: name}`` of the ``- Name: explanation`` lines of a guidance string."""
    return {m.group(1).strip().lower(): m.group(1).strip() for m in _LINE_RE.finditer(guidance)}


def clean_type_name(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    words = _BAD_CHARS.sub(" ", name).split()
    if not words or len(words) > 4:
        return None
    cleaned = "".join(w[:1].upper() + w[1:] for w in words)[:40]
    return cleaned if cleaned.lower() not in {"other", "unknown"} else None


@total_parser()
def parse_type_answer(text: str | None) -> list[tuple[str, str]] | None:
    """``[(name, explanation)]`` from an LLM answer, or ``None`` when the answer is unusable."""
    data = parse_json_answer(text)
    items = data.get("entity_types") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return None
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        name = clean_type_name(item.get("name") or item.get("entity_type"))
        explanation = " ".join(str(item.get("explanation") or "").split())[:200]
        if name:
            out.append((name, explanation or f"Domain-specific {name}"))
    return out


def build_guidance(base_guidance: str, discovered: list[dict[str, str]]) -> str:
    """Base guidance (kept verbatim) plus one ``- Name: explanation`` line per discovered type."""
    known = guidance_types(base_guidance)
    lines = [f"- {d['name']}: {d['explanation']}" for d in discovered if d["name"].lower() not in known]
    return base_guidance.rstrip() + ("\n" + "\n".join(lines) if lines else "")


def sample_windows(tokenizer, text: str, per_text: int) -> list[str]:
    """At most ``per_text`` evenly spaced windows of ``WINDOW_TOKENS`` tokens of ``text``."""
    tokens = tokenizer.encode(text)
    starts = list(range(0, max(len(tokens), 1), WINDOW_TOKENS))
    if len(starts) > per_text:
        step = (len(starts) - 1) / max(per_text - 1, 1)
        starts = sorted({starts[round(i * step)] for i in range(per_text)})
    return [tokenizer.decode(tokens[s:s + WINDOW_TOKENS]) for s in starts]


def read_folder(folder: str | os.PathLike) -> list[str]:
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"input_folder {str(folder)!r} is not a directory")
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES)
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


async def load_state(rag) -> dict[str, Any] | None:
    try:
        state = await plugin_state(rag).document(STATE_DOCUMENT).load(None)
    except ValueError as exc:  # damaged: the base types apply until the next discovery rewrites it
        logger.warning("ignoring unreadable entity types (%s)", exc)
        return None
    return state if isinstance(state, dict) and isinstance(state.get("guidance"), str) else None


async def save_state(rag, state: dict[str, Any]) -> None:
    await plugin_state(rag).document(STATE_DOCUMENT).save(state)


def base_guidance_of(rag, state: dict[str, Any] | None) -> str:
    if state and state.get("base_guidance"):
        return state["base_guidance"]
    return rag.addon_params.get("entity_types_guidance") or PROMPTS["default_entity_types_guidance"]


async def _ask(rag, base: str, excerpt: str, max_new: int) -> list[tuple[str, str]] | None:
    prompt = TYPE_PROMPT.format(current=base, max_new=max_new, excerpt=excerpt)
    try:
        answer = await cached_llm_call(rag, prompt, cache_type="entity_types")
    except Exception as exc:  # noqa: BLE001 - an LLM failure is a recorded fallback, not a crash
        logger.warning("entity type discovery: LLM call failed: %s", exc)
        return None
    return parse_type_answer(answer)


async def discover_entity_types(rag, texts: list[str], force_refresh: bool = False) -> dict[str, Any]:
    state = await load_state(rag) or {}
    base = base_guidance_of(rag, state)
    analysed = set(state.get("analysed", [])) if not force_refresh else set()
    fresh = [t for t in texts if t and t.strip() and content_hash(t) not in analysed]
    result = {"analysed": len(fresh), "skipped": len(texts) - len(fresh), "added_types": [], "fallback": None}
    discovered = [] if force_refresh else list(state.get("discovered", []))
    if fresh and not rag.llm_configured:
        result["fallback"] = "no LLM configured: base entity types kept"
        logger.warning("entity_type_aug: %s", result["fallback"])
        fresh = []
    if fresh:
        per_text, max_new = rag.entity_type_samples_per_text, rag.entity_type_max_new
        excerpts = [w for t in fresh for w in sample_windows(rag.tokenizer, t, per_text)]
        answers = await asyncio.gather(*(_ask(rag, base, e, max_new) for e in excerpts))
        result["unparsed_answers"] = sum(a is None for a in answers)
        votes, explanations = Counter(), {}
        known = guidance_types(base) | {d["name"].lower(): d["name"] for d in discovered}
        for name, explanation in (pair for answer in answers if answer for pair in answer):
            if name.lower() not in known:
                votes[name] += 1
                explanations.setdefault(name, explanation)
        new = [{"name": n, "explanation": explanations[n]} for n, _ in votes.most_common(max_new)]
        discovered += new
        result["added_types"] = [d["name"] for d in new]
        analysed |= {content_hash(t) for t in fresh}
    guidance = build_guidance(base, discovered)
    rag.addon_params["entity_types_guidance"] = guidance
    await save_state(rag, {"base_guidance": base, "discovered": discovered, "guidance": guidance,
                           "analysed": sorted(analysed)})
    result["entity_types"] = list(guidance_types(guidance).values())
    result["guidance"] = guidance
    return result
