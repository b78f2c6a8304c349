"""Prompts of the ``fidelis`` mode and the parsers of their answers.

The prompts follow the official FiDeLiS code (Y-Sui/FiDeLiS ``src/prompts``): a planning prompt returning JSON with
``keywords``, ``planning_steps`` and ``declarative_statement``; a beam prompt asking for the indices of the best
``beam_width`` candidate paths; a deductive verifier asking whether the statement follows from the paths.

LLM answers are untrusted. Every parser returns ``None`` (or a documented default) on garbage instead of raising,
and never evaluates the text. The official parsers' bugs are fixed here: the verifier answer is read
case-insensitively and a reply containing both "yes" and "no" counts as "no"; beam indices come from a JSON list or
the LAST bracketed list (not from every number in the reply), are bounded, de-duplicated and filled up in score order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...llm import parse_json_answer, total_parser

PLAN_STEP = "fidelis_plan"
BEAM_STEP = "fidelis_beam"
VERIFY_STEP = "fidelis_verify"

PLAN_PROMPT = """You are a planner for answering questions over a knowledge graph.
Given the question below, return a JSON object with exactly these fields:
- 'planning_steps': a short list of steps describing how to reach the answer by following relations in a knowledge graph;
- 'keywords': an exhaustive list of keywords or relation names that the reasoning path may contain, for maximum coverage;
- 'declarative_statement': the question rewritten as a declarative statement with *placeholder* in place of the answer.

Example: for the question 'What do Jamaican people speak?' the declarative statement is 'Jamaican people speak *placeholder*.'

Question: {question}

Return only the JSON object."""

BEAM_PROMPT = """Given a question and the planning steps to answer it, choose the best {beam_width} reasoning paths from the
following candidates with the highest probability to lead to a useful reasoning path for answering the question.

Question: {question}
Planning steps:
{plan}

Candidate reasoning paths:
{reasoning_paths}

Only return the index of the {beam_width} selected reasoning paths in a list, e.g. [0, 3, 5]."""

VERIFY_PROMPT = """Whether the conclusion '{declarative_statement}' can be deduced from the following reasoning paths
(*placeholder* stands for the answer, usually the last entity of a path), if yes, return yes, if no, return no.

Reasoning paths:
{reasoning_paths}

Answer yes or no."""


@dataclass
class Plan:
    planning_steps: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    declarative_statement: str = ""
    parsed: str = "json"  # "json" | "tolerant" | "fallback"


def _as_str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = re.split(r"[,;\n]", value)
    if not isinstance(value, (list, tuple)):
        return []
    return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]


def _tolerant_plan(text: str) -> dict[str, Any] | None:
    """Pull the fields out of almost-JSON (single quotes, trailing commas, truncated object)."""
    out: dict[str, Any] = {}
    kw = re.search(r"""['"]?keywords['"]?\s*[:=]\s*\[(.*?)\]""", text, re.DOTALL | re.IGNORECASE)
    if kw:
        out["keywords"] = re.findall(r"""["']([^"'\n]{1,100})["']""", kw.group(1))
    steps = re.search(r"""['"]?planning_steps['"]?\s*[:=]\s*\[(.*?)\]""", text, re.DOTALL | re.IGNORECASE)
    if steps:
        out["planning_steps"] = re.findall(r"""["']([^"'\n]{1,300})["']""", steps.group(1))
    stmt = re.search(r"""['"]?declarative_statement['"]?\s*[:=]\s*["'](.+?)["']\s*[,}\n]""", text,
                     re.DOTALL | re.IGNORECASE)
    if stmt:
        out["declarative_statement"] = stmt.group(1).strip()
    return out if out.get("keywords") else None


@total_parser()
def parse_plan(text: str | None) -> Plan | None:
    """The planning answer as a :class:`Plan`, or ``None`` when no keywords can be read from it."""
    data = parse_json_answer(text)
    how = "json"
    if not isinstance(data, dict) or not _as_str_list(data.get("keywords")):
        data, how = (_tolerant_plan(text) if text else None), "tolerant"
    if not data:
        return None
    steps = data.get("planning_steps", data.get("plan", []))
    statement = data.get("declarative_statement", "")
    return Plan(planning_steps=_as_str_list(steps) if not isinstance(steps, str) else [steps.strip()],
                keywords=list(dict.fromkeys(_as_str_list(data.get("keywords")))),
                declarative_statement=statement.strip() if isinstance(statement, str) else "", parsed=how)


_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
_INT = re.compile(r"-?\d+")


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, dict):  # {"indices": [...]} or {"selected": [...]}: the first list of ints inside
        for v in value.values():
            got = _int_list(v)
            if got:
                return got
        return None
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
            out.append(int(v))
    return out or None


@total_parser()
def parse_index_list(text: str | None) -> list[int] | None:
    """Indices from a JSON list (or object holding one), else from the LAST bracketed list; ``None`` on garbage."""
    if not text:
        return None
    got = _int_list(parse_json_answer(text))
    if got:
        return got
    for inner in reversed(_BRACKETED.findall(text)):
        numbers = [int(n) for n in _INT.findall(inner)]
        if numbers:
            return numbers
    return None


@dataclass
class BeamChoice:
    indices: list[int]
    source: str  # "llm" | "llm+filled" | "score"
    dropped: list[int] = field(default_factory=list)  # out-of-range or duplicate indices the LLM gave


def validate_beam_choice(text: str | None, n_candidates: int, width: int) -> BeamChoice:
    """Turn the beam answer into ``min(width, n_candidates)`` distinct in-range indices.

    Candidates are numbered in score order, so "fill up" and "fall back" both take the best-scored unused ones.
    """
    want = min(width, n_candidates)
    raw = parse_index_list(text)
    if raw is None:
        return BeamChoice(list(range(want)), "score")
    chosen: list[int] = []
    dropped: list[int] = []
    for i in raw:
        if 0 <= i < n_candidates and i not in chosen and len(chosen) < want:
            chosen.append(i)
        elif not (0 <= i < n_candidates) or i in chosen:
            dropped.append(i)
    if not chosen:
        return BeamChoice(list(range(want)), "score", dropped)
    source = "llm"
    if len(chosen) < want:
        chosen += [i for i in range(n_candidates) if i not in chosen][:want - len(chosen)]
        source = "llm+filled"
    return BeamChoice(chosen, source, dropped)


_YES = re.compile(r"\byes\b")
_NO = re.compile(r"\b(no|not|cannot|can't|can ?not|unable|insufficient)\b")


@total_parser(False)
def parse_yes_no(text: str | None) -> bool:
    """Verifier answer → True only for an unambiguous yes ("Yes", "yes.", "**YES**", "The answer is yes").

    "no", "not deducible", a reply with both yes and no, or with neither, are all ``False`` (keep searching).
    """
    if not text:
        return False
    lowered = text.lower()
    return bool(_YES.search(lowered)) and not _NO.search(lowered)


def format_paths(paths: list[str]) -> str:
    return "\n".join(f"{i}: {p}" for i, p in enumerate(paths))
