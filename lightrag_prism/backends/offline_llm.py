"""The no-LLM stand-in: answers the LightRAG prompts that have a deterministic fallback, refuses the rest.

It is used as ``llm_model_func`` when the user configures no LLM, so that indexing and retrieval run offline:

* entity extraction -> a heuristic extractor: capitalised phrases are entities, two entities in the same sentence
  are related (description = that sentence);
* gleaning -> nothing more to add;
* description summaries -> the descriptions joined in order (nothing is dropped);
* keyword extraction -> :func:`lightrag_prism.keywords.extract_keywords`;
* anything else (answer generation, LLM filters) -> :class:`LLMNotConfiguredError`, whose message explains how to
  configure an LLM. Modes catch it where they have their own fallback and record that in the result metadata.
"""

from __future__ import annotations

import itertools
import json
import re

from ..errors import LLMNotConfiguredError
from ..keywords import extract_keywords

OFFLINE_MODEL_NAME = "lightrag-prism-offline"
TUPLE_DELIMITER = "<|#|>"
COMPLETE = "<|COMPLETE|>"
FENCED_INPUT = re.compile(r"---Input Text---\s*```\n?(.*?)```", re.DOTALL)
_FENCED_DESCRIPTIONS = re.compile(r"Description List:\s*```\n?(.*?)```", re.DOTALL)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_ENTITY = re.compile(r"\b[A-Z][\w'’\-]*(?:\s+(?:of|the|de|and|for)?\s*[A-Z][\w'’\-]*)*")
_USER_QUERY = re.compile(r"User Query:\s*(.*?)\n\s*\n", re.DOTALL)
_MAX_ENTITIES_PER_CHUNK = 40


def heuristic_extraction(text: str) -> str:
    """Rows in LightRAG's extraction format for ``text`` (entities first, then relations, then COMPLETE)."""
    entities: dict[str, str] = {}
    relations: dict[tuple[str, str], str] = {}
    for sentence in (s.strip() for s in _SENTENCE.findall(text)):
        names = [n for n in dict.fromkeys(m.group(0).strip() for m in _ENTITY.finditer(sentence)) if len(n) > 1]
        for name in names:
            if len(entities) < _MAX_ENTITIES_PER_CHUNK:
                entities.setdefault(name, sentence)
        for a, b in itertools.combinations([n for n in names if n in entities], 2):
            relations.setdefault((a, b), sentence)
    rows = [f"entity{TUPLE_DELIMITER}{n}{TUPLE_DELIMITER}concept{TUPLE_DELIMITER}{d}" for n, d in entities.items()]
    rows += [
        f"relation{TUPLE_DELIMITER}{a}{TUPLE_DELIMITER}{b}{TUPLE_DELIMITER}co-occurrence{TUPLE_DELIMITER}{d}"
        for (a, b), d in relations.items()
    ]
    return "\n".join(rows + [COMPLETE])


def _joined_descriptions(prompt: str) -> str:
    block = _FENCED_DESCRIPTIONS.search(prompt)
    parts = []
    for line in (block.group(1) if block else "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            parts.append(str(json.loads(line).get("description", line)))
        except (json.JSONDecodeError, AttributeError):
            parts.append(line)
    return "\n".join(parts)


async def offline_llm_complete(prompt: str, system_prompt: str | None = None, history_messages=None, **kwargs) -> str:
    """LightRAG-compatible LLM function that works without any model (see module docstring)."""
    system = system_prompt or ""
    if "Based on the last extraction task" in prompt:
        return json.dumps({"entities": [], "relationships": []}) if "JSON Contract" in system else COMPLETE
    match = FENCED_INPUT.search(prompt)
    if match and "Knowledge Graph Specialist" in system:
        if "JSON Contract" in system:
            raise LLMNotConfiguredError("JSON-mode entity extraction")
        return heuristic_extraction(match.group(1))
    if "Description List:" in prompt:
        return _joined_descriptions(prompt)
    if "expert keyword extractor" in prompt or "expert keyword extractor" in system:
        query_match = _USER_QUERY.search(prompt)
        high, low = extract_keywords(query_match.group(1).strip() if query_match else prompt)
        return json.dumps({"high_level_keywords": high, "low_level_keywords": low})
    raise LLMNotConfiguredError("This step (answer generation or an LLM judgement)")


offline_llm_complete.is_offline_stand_in = True  # how PrismRAG tells "no LLM configured"
