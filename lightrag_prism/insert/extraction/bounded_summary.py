"""Bounded descriptions without an LLM: distinct, informative fragments within a token budget.

LightRAG merges an entity's (or relation's) description fragments, one or more per source chunk, and summarises
them with the LLM past ``force_llm_summary_on_merge`` fragments or its token limits. Without an LLM, joining them
all lets a hub's description grow with every chunk that mentions it (one summary input measured 47,961 tokens).
:func:`select_fragments` keeps it bounded:

1. fragments are deduplicated: case and spacing are ignored, and a fragment contained in a longer one is dropped;
2. they are read in LightRAG's order (the stored description's fragments first, then the new ones, oldest first),
   and one is kept when it still fits the budget and says something new: it has content words that the kept
   fragments do not have yet;
3. the kept fragments are joined with LightRAG's separator, so the next merge splits them back.

The selection is stable: a stored description is kept as it is, and new fragments are only added. Once a
description is full it no longer changes, so the merge work per chunk stays bounded and an entity touched again
is not re-embedded (its text is unchanged). Provenance is untouched: source ids are merged by LightRAG itself
(``source_id`` and the entity/relation chunk stores), never by this selection.
"""

from __future__ import annotations

import re
from typing import Callable

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MIN_WORD = 3  # shorter words ("of", "in", "a") say little about coverage


def _norm(fragment: str) -> str:
    return " ".join(fragment.lower().split())


def distinct_fragments(fragments: list[str]) -> list[str]:
    """Fragments in order, without exact (normalised) duplicates or fragments inside a longer one."""
    unique = list(dict.fromkeys(f.strip() for f in fragments if f and f.strip()))
    norms = [_norm(f) for f in unique]
    by_length = sorted(range(len(unique)), key=lambda i: -len(norms[i]))
    kept: list[int] = []
    for i in by_length:
        if not any(norms[i] in norms[j] for j in kept):
            kept.append(i)
    return [unique[i] for i in sorted(kept)]


def select_fragments(fragments: list[str], budget_tokens: int, count_tokens: Callable[[str], int],
                     separator_tokens: int = 0) -> list[str]:
    """The fragments to keep, in order, whose token counts (plus ``separator_tokens`` between two fragments) sum
    to at most ``budget_tokens``.

    The first fragment is kept even when it alone exceeds the budget, so a description is never empty.
    """
    kept: list[str] = []
    covered: set[str] = set()
    spent = 0
    for fragment in distinct_fragments(fragments):
        words = {w for w in _WORD.findall(fragment.lower()) if len(w) >= _MIN_WORD}
        cost = max(1, count_tokens(fragment)) + (separator_tokens if kept else 0)
        if kept and (spent + cost > budget_tokens or not words - covered):
            continue
        kept.append(fragment)
        covered |= words
        spent += cost
    return kept
