"""Default answers of the scripted server, speaking lightrag-hku 1.5.7's prompt formats.

The markers below were checked against ``lightrag/prompt.py`` of 1.5.7:

* extraction: system prompt "Knowledge Graph Specialist responsible for extracting", user prompt with
  the text after ``---Input Text---`` inside a triple-backtick fence; answer rows
  ``entity<|#|>Name<|#|>type<|#|>desc`` then ``relation<|#|>A<|#|>B<|#|>kw<|#|>desc`` then
  ``<|COMPLETE|>``;
* JSON extraction: system prompt contains "JSON Contract" or ``response_format`` is set; answer
  ``{"entities": [...], "relationships": [...]}``;
* gleaning: last user message starts "Based on the last extraction task" → ``<|COMPLETE|>``
  (JSON mode: empty lists);
* summary: "synthesize a list of descriptions", JSON lines after "Description List:" → joined text;
* keywords: "expert keyword extractor", query after ``User Query:`` → keyword JSON;
* anything else: a canned answer quoting the first chunk ``content`` found in the context.

Entities are runs of capitalised words (leading function words such as "The" dropped); relations
link entities that co-occur in a sentence.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

TUPLE_DELIM = "<|#|>"
COMPLETE = "<|COMPLETE|>"

EXTRACTION_MARKER = "Knowledge Graph Specialist responsible for extracting"
JSON_MARKER = "JSON Contract"
GLEANING_MARKER = "Based on the last extraction task"
SUMMARY_MARKER = "synthesize a list of descriptions"
KEYWORD_MARKER = "expert keyword extractor"
INPUT_MARKER = "---Input Text---"

CANNED_PREFIX = "Scripted answer."

_STOP = frozenset(
    "a an the in on at of and or but to for by with from as is are was were be it its this that these "
    "those he she they we i you his her their our my your who what when where which why how if then "
    "after before during while also however although both each all some many most other another "
    "there here not no yes".split()
)
_CAP_RUN = re.compile(r"\b[A-Z][\w'\-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'\-]*)*")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_FENCE = re.compile(r"```\s*\n(.*?)\n```", re.DOTALL)


def _content_text(content: Any) -> str:
    """Message content as text (string, or the text parts of a multimodal list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def messages_text(body: dict) -> str:
    """All message contents of a chat request joined by newlines."""
    return "\n".join(_content_text(m.get("content")) for m in body.get("messages", []))


def system_text(body: dict) -> str:
    """The system messages of a chat request."""
    msgs = body.get("messages", [])
    return "\n".join(_content_text(m.get("content")) for m in msgs if m.get("role") == "system")


def last_user_text(body: dict) -> str:
    """The last user message of a chat request ('' if none)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _content_text(users[-1].get("content")) if users else ""


def input_text(prompt: str) -> str:
    """The fenced text after ``---Input Text---`` (the whole tail if there is no fence)."""
    tail = prompt.split(INPUT_MARKER, 1)[-1]
    fenced = _FENCE.search(tail)
    return fenced.group(1) if fenced else tail


def capitalised_runs(sentence: str) -> list[str]:
    """Capitalised word runs of ``sentence``, leading function words stripped, order kept, unique."""
    found: list[str] = []
    for run in _CAP_RUN.findall(sentence):
        words = run.split()
        while words and words[0].lower() in _STOP:
            words = words[1:]
        name = " ".join(words).strip("'-")
        if name and name not in found:
            found.append(name)
    return found


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split on ., !, ? and newlines), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s.strip()]


def extract_graph(text: str) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Entities ``{name: first sentence}`` and relations ``{(a, b): sentence}`` of ``text``."""
    entities: dict[str, str] = {}
    relations: dict[tuple[str, str], str] = {}
    for sent in sentences(text):
        names = capitalised_runs(sent)
        for name in names:
            entities.setdefault(name, sent)
        for a, b in itertools.combinations(names, 2):
            if (b, a) not in relations:
                relations.setdefault((a, b), sent)
    return entities, relations


def _clean(value: str) -> str:
    return value.replace(TUPLE_DELIM, " ").replace("\n", " ").strip()


def extraction_rows(text: str) -> str:
    """LightRAG delimiter-format extraction answer for ``text``."""
    entities, relations = extract_graph(text)
    rows = [f"entity{TUPLE_DELIM}{n}{TUPLE_DELIM}Other{TUPLE_DELIM}{_clean(d)}" for n, d in entities.items()]
    rows += [
        f"relation{TUPLE_DELIM}{a}{TUPLE_DELIM}{b}{TUPLE_DELIM}co-occurrence{TUPLE_DELIM}{_clean(d)}"
        for (a, b), d in relations.items()
    ]
    return "\n".join(rows + [COMPLETE])


def extraction_json(text: str) -> str:
    """LightRAG JSON-mode extraction answer for ``text``."""
    entities, relations = extract_graph(text)
    return json.dumps(
        {
            "entities": [{"name": n, "type": "Other", "description": d} for n, d in entities.items()],
            "relationships": [
                {"source": a, "target": b, "keywords": "co-occurrence", "description": d}
                for (a, b), d in relations.items()
            ],
        }
    )


def summary_answer(prompt: str) -> str:
    """Join the ``{"Description": ...}`` lines after ``Description List:``."""
    tail = prompt.split("Description List:", 1)[-1]
    block = _FENCE.search(tail)
    lines = (block.group(1) if block else tail).splitlines()
    parts = []
    for line in lines:
        try:
            parts.append(str(json.loads(line)["Description"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return " ".join(parts) or "No description."


def query_of(prompt: str) -> str:
    """The text after ``User Query:`` up to the blank line before ``---Output---``."""
    tail = prompt.split("User Query:", 1)[-1]
    return tail.split("\n\n", 1)[0].split("---Output---", 1)[0].strip()


def keywords_answer(prompt: str) -> str:
    """Keyword JSON: capitalised runs (else content words) of the query, in both lists."""
    query = query_of(prompt)
    names = capitalised_runs(query)
    if not names:
        names = [w for w in re.findall(r"[A-Za-z][\w\-]+", query) if w.lower() not in _STOP]
    return json.dumps({"high_level_keywords": names, "low_level_keywords": names})


def canned_answer(body: dict) -> str:
    """A fixed answer quoting the first ``"content"`` of the context, else the user message."""
    text = messages_text(body)
    match = re.search(r'"content":\s*"((?:[^"\\]|\\.){1,200})', text)
    quote = match.group(1) if match else last_user_text(body)[:200]
    return f'{CANNED_PREFIX} According to the context: "{quote}"'


def is_json_mode(body: dict) -> bool:
    """JSON extraction mode: "JSON Contract" in the system prompt or a ``response_format``."""
    return JSON_MARKER in system_text(body) or body.get("response_format") is not None


def lightrag_responder(body: dict) -> str:
    """Default answer for a chat request body, dispatching on LightRAG's prompt markers."""
    system, user = system_text(body), last_user_text(body)
    if GLEANING_MARKER in user:
        return json.dumps({"entities": [], "relationships": []}) if is_json_mode(body) else COMPLETE
    if EXTRACTION_MARKER in system and INPUT_MARKER in user:
        text = input_text(user)
        return extraction_json(text) if is_json_mode(body) else extraction_rows(text)
    if SUMMARY_MARKER in user or SUMMARY_MARKER in system:
        return summary_answer(user if SUMMARY_MARKER in user else system)
    if KEYWORD_MARKER in user or KEYWORD_MARKER in system:
        return keywords_answer(user if KEYWORD_MARKER in user else system)
    return canned_answer(body)
