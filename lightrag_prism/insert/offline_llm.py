"""The no-LLM stand-in: answers the LightRAG prompts that have a deterministic fallback, refuses the rest.

It is used as ``llm_model_func`` when the user configures no LLM, so that indexing and retrieval run offline:

* entity extraction -> the offline extractor (:mod:`lightrag_prism.insert.extraction`: spaCy's English pipeline,
  or the capitalised-phrase fallback when spaCy is missing), batched across concurrent chunks;
* gleaning -> nothing more to add;
* description summaries -> the most informative distinct descriptions within a budget (PrismRAG instances never
  ask: their summary hook bounds descriptions before LightRAG would call an LLM);
* keyword extraction -> :func:`lightrag_prism.keywords.extract_keywords`;
* anything else (answer generation, LLM filters) -> :class:`LLMNotConfiguredError`, whose message explains how to
  configure an LLM. Modes catch it where they have their own fallback and record that in the result metadata.
"""

from __future__ import annotations

import json
import re

from ..errors import LLMNotConfiguredError
from .extraction import COMPLETE, EXTRACTOR_VERSION, TUPLE_DELIMITER, check_extractor, extract_rows
from .extraction.bounded_summary import select_fragments
from ..keywords import extract_keywords

OFFLINE_MODEL_NAME = "lightrag-prism-offline"
FENCED_INPUT = re.compile(r"---Input Text---\s*```\n?(.*?)```", re.DOTALL)
_FENCED_DESCRIPTIONS = re.compile(r"Description List:\s*```\n?(.*?)```", re.DOTALL)
_USER_QUERY = re.compile(r"User Query:\s*(.*?)\n\s*\n", re.DOTALL)
SUMMARY_WORD_BUDGET = 400  # stand-in answers only; PrismRAG bounds descriptions by tokens before this

__all__ = ["COMPLETE", "FENCED_INPUT", "OFFLINE_MODEL_NAME", "TUPLE_DELIMITER", "offline_llm", "offline_llm_complete",
           "offline_model_name"]


def _descriptions(prompt: str) -> list[str]:
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
    return parts


def offline_model_name(extractor: str = "auto") -> str:
    """The ``llm_model_name`` of a stand-in: LightRAG's cache never mixes two extractors' (or versions') answers."""
    return f"{OFFLINE_MODEL_NAME}:{extractor}-v{EXTRACTOR_VERSION}"


def offline_llm(extractor: str = "auto", answer_note: str | None = None):
    """A LightRAG-compatible LLM function that works without any model (see module docstring). A prompt it cannot
    answer raises :class:`LLMNotConfiguredError`, or returns ``answer_note`` when one is given (LightRAG Server's
    raw-LLM routes, e.g. Ollama's ``/api/generate``, then answer with the note instead of an error 500)."""
    check_extractor(extractor)

    async def offline_llm_complete(prompt: str, system_prompt: str | None = None, history_messages=None,
                                   **kwargs) -> str:
        system = system_prompt or ""
        if "Based on the last extraction task" in prompt:
            return json.dumps({"entities": [], "relationships": []}) if "JSON Contract" in system else COMPLETE
        match = FENCED_INPUT.search(prompt)
        if match and "Knowledge Graph Specialist" in system:
            if "JSON Contract" in system:
                raise LLMNotConfiguredError("JSON-mode entity extraction")
            return await extract_rows(match.group(1), extractor)
        if "Description List:" in prompt:
            return "\n".join(select_fragments(_descriptions(prompt), SUMMARY_WORD_BUDGET, lambda t: len(t.split())))
        if "expert keyword extractor" in prompt or "expert keyword extractor" in system:
            query_match = _USER_QUERY.search(prompt)
            high, low = extract_keywords(query_match.group(1).strip() if query_match else prompt)
            return json.dumps({"high_level_keywords": high, "low_level_keywords": low})
        if answer_note is not None:
            return answer_note
        raise LLMNotConfiguredError("This step (answer generation or an LLM judgement)")

    offline_llm_complete.is_offline_stand_in = True  # how PrismRAG tells "no LLM configured"
    offline_llm_complete.extractor = extractor
    return offline_llm_complete


offline_llm_complete = offline_llm()
