"""Parsing of LLM answers for the rerankers. Pure functions; nothing is ever ``eval``ed.

* ``parse_listwise_answer``: JSON ranking (+ optional scores) from a listwise window answer.
* ``parse_pairwise_verdict``: "A", "B" or ``None`` (tie / unparseable) from a pairwise answer.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from ..llm import total_parser

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
# The lists are bounded, and looked for in the answer's first REGEX_SPAN characters: an unbounded ``[^\]]*``
# rescanned the rest of the text from every "ranking: [" without a closing bracket (3.5 s on a 100,000-character
# answer repeating it). A window's ranking and scores are far shorter.
_RANKING_RE = re.compile(r"[\"']?ranking[\"']?\s*[:=]\s*\[([^\]]{0,2000})\]", re.IGNORECASE)
_SCORES_BLOCK_RE = re.compile(r"[\"']?scores[\"']?\s*[:=]\s*\{([^}]{0,4000})\}", re.IGNORECASE)
REGEX_SPAN = 20_000
_SCORE_PAIR_RE = re.compile(r"[\"']?(-?\d+)[\"']?\s*:\s*(-?\d+(?:\.\d+)?)")
_INT_RE = re.compile(r"-?\d+")


@dataclass
class ListwiseAnswer:
    """A parsed (not yet validated) window answer: labels as the LLM wrote them."""

    ranking: list[int]
    scores: dict[int, float] = field(default_factory=dict)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\[?\s*-?\d+\s*\]?\s*", value):
        return int(_INT_RE.search(value).group())
    return None


def _as_score(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if math.isfinite(score) else None


def _from_items(items: list[Any]) -> ListwiseAnswer | None:
    """``[3, 1, 2]`` or ``[{"index": 3, "score": 90}, ...]`` (list order = ranking)."""
    ranking: list[int] = []
    scores: dict[int, float] = {}
    for item in items:
        if isinstance(item, dict):
            index = _as_int(item.get("index", item.get("id", item.get("doc"))))
            score = _as_score(item.get("score", item.get("relevance")))
            if index is not None and score is not None:
                scores[index] = score
        else:
            index = _as_int(item)
        if index is None:
            return None
        ranking.append(index)
    return ListwiseAnswer(ranking, scores)


def _from_json(data: Any) -> ListwiseAnswer | None:
    if isinstance(data, list):
        return _from_items(data)
    if not isinstance(data, dict) or not isinstance(data.get("ranking"), list):
        return None
    answer = _from_items(data["ranking"])
    if answer is None:
        return None
    raw_scores = data.get("scores")
    if isinstance(raw_scores, dict):
        for key, value in raw_scores.items():
            index, score = _as_int(key), _as_score(value)
            if index is not None and score is not None:
                answer.scores[index] = score
    elif isinstance(raw_scores, list) and len(raw_scores) == len(answer.ranking):
        for index, value in zip(answer.ranking, raw_scores):  # scores aligned with the ranking
            score = _as_score(value)
            if score is not None:
                answer.scores[index] = score
    return answer


def _first_balanced(text: str, open_ch: str, close_ch: str) -> str | None:
    """The first balanced ``open_ch ... close_ch`` block: the earliest opener that has a matching closer (brackets
    inside strings are skipped). One pass with a stack: a scan from every opener was quadratic on ``'{' * n``."""
    first = text.find(open_ch)
    if first == -1:
        return None
    stack: list[int] = []
    best: tuple[int, int] | None = None
    in_str = escaped = False
    for pos in range(first, len(text)):
        ch = text[pos]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == open_ch:
            stack.append(pos)
        elif ch == close_ch and stack:
            opened = stack.pop()
            if not stack and (best is None or opened < best[0]):
                return text[opened: pos + 1]  # every opener before it was matched earlier or never is
            if best is None or opened < best[0]:
                best = (opened, pos)
    return text[best[0]: best[1] + 1] if best else None


def _try_json(text: str) -> ListwiseAnswer | None:
    try:
        return _from_json(json.loads(text))
    except (ValueError, TypeError, RecursionError):  # deep nesting recurses in the decoder
        return None


def _regex_answer(text: str) -> ListwiseAnswer | None:
    match = _RANKING_RE.search(text[:REGEX_SPAN])
    if not match:
        return None
    ranking = [int(tok) for tok in _INT_RE.findall(match.group(1))]
    if not ranking:
        return None
    scores: dict[int, float] = {}
    block = _SCORES_BLOCK_RE.search(text[:REGEX_SPAN])
    if block:
        for key, value in _SCORE_PAIR_RE.findall(block.group(1)):
            scores[int(key)] = float(value)
    return ListwiseAnswer(ranking, scores)


@total_parser()
def parse_listwise_answer(text: str) -> ListwiseAnswer | None:
    """Parse a window answer: whole-text JSON, fenced JSON, first ``{...}``, a regex, then an outer ``[...]``."""
    if not isinstance(text, str) or not text.strip():
        return None
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    obj = _first_balanced(text, "{", "}")
    if obj:
        candidates.append(obj)
    for candidate in candidates:
        answer = _try_json(candidate)
        if answer is not None:
            return answer
    answer = _regex_answer(text)
    if answer is not None:
        return answer
    # a bare list only when it is the outer structure: '[{"index": ...}]', not the list inside '{"order": [..]}'
    bracket, brace = text.find("["), text.find("{")
    if bracket != -1 and (brace == -1 or bracket < brace):
        return _try_json(_first_balanced(text, "[", "]") or "")
    return None


# --- pairwise verdicts -------------------------------------------------------------------------

_LETTER = r"([ab])(?![a-z0-9])"
_CAP_LETTER = r"([AB])(?![A-Za-z0-9])"
_MARKER = r"(?i:\b(?:answer|verdict|preferred(?:\s+passage)?|preference|choice|winner|better\s+passage))"
# Tier 1: explicit verdict markers. Tier 2: any mention of "passage X" or a capital standalone letter.
_TIER1 = [
    re.compile(r"\[\[\s*" + _LETTER + r"\s*\]\]", re.IGNORECASE),
    re.compile(r"\*\*\s*(?:passage\s+)?" + _LETTER + r"\s*\*\*", re.IGNORECASE),
    # "Answer: b", "Preferred passage = (A)" — a separator makes a lowercase letter safe
    re.compile(_MARKER + r"\s*(?i:is)?\s*[:=]\s*[\"'(\[*]*(?i:passage\s+)?(?i:" + _LETTER + ")"),
    # "The answer is A", "the better passage is passage b" — without a separator only "passage x" or a capital
    re.compile(_MARKER + r"\s+(?i:is)\s+(?:(?i:passage\s+" + _LETTER + ")|" + _CAP_LETTER + ")"),
    re.compile(
        r"(?:\bpassage\s+)?\b" + _LETTER + r"\s+is\s+(?:the\s+)?(?:better|more|most|preferred|superior)",
        re.IGNORECASE,
    ),
    # the reply *is* the letter: "A", "b.", "Passage B", "(A) because ..."
    re.compile(r"^[\s\"'(\[*]*(?:passage\s+)?([ab])[\s\"')\]*]*(?:$|[.:,;!\n)\-])", re.IGNORECASE),
]
_TIER2 = [
    re.compile(r"\bpassage\s+" + _LETTER, re.IGNORECASE),
    re.compile(r"(?<![A-Za-z0-9'])" + _CAP_LETTER),
]


def _letters(patterns: list[re.Pattern[str]], text: str) -> set[str]:
    found: set[str] = set()
    for pattern in patterns:
        for match in pattern.finditer(text):
            found.add(next(group for group in match.groups() if group).upper())
    return found


@total_parser()
def parse_pairwise_verdict(text: str) -> str | None:
    """``"A"``/``"B"`` when exactly one letter is named at the strongest tier that names any, else ``None``.

    Tier 1 (explicit): ``[[A]]``, ``**B**``, ``Answer: b``, ``Preferred passage: A``, a reply that *is*
    the letter (``"A"``, ``"B."``, ``"Passage B"``, ``"A: because ..."``). Tier 2 (mentions): ``passage a``
    anywhere, a capital standalone ``A``/``B``. Both letters at the deciding tier, or none at all → ``None``
    (a tie). The first character alone is never trusted: ``"Both are ..."`` is not "B".
    """
    if not isinstance(text, str) or not text.strip():
        return None
    for tier in (_TIER1, _TIER2):
        letters = _letters(tier, text.strip())
        if len(letters) == 1:
            return letters.pop()
        if len(letters) > 1:
            return None
    return None
