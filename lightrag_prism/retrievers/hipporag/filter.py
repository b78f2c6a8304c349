"""Recognition memory (HippoRAG 2's DSPy fact filter): the LLM keeps the candidate facts relevant to the query.

The prompt is HippoRAG 2's DSPy program written out natively (no ``dspy`` dependency): the system message, four
few-shot examples as user/assistant turns in DSPy field format (``[[ ## field ## ]]``) and the user template.
Few-shots go as ``history_messages`` when the LLM function accepts them (LightRAG's own clients do: LightRAG passes
``history_messages`` to every answer call), else inline before the question.

The answer is untrusted: :func:`parse_filter_response` tries the ``fact_after_filter`` field and the whole text as
JSON, then ``ast.literal_eval`` (a literal parser, never ``eval``), then a tolerant extraction (fenced/outermost JSON,
then quoted ``[s, p, o]`` triples). :func:`match_facts` maps each returned fact back to a candidate: exactly after
normalisation (NFKC, case-folded, punctuation removed, whitespace collapsed; other Unicode kept), else the most
similar candidate if its ``difflib`` ratio is >= :data:`MATCH_THRESHOLD`; anything else is an invented fact and is
dropped (HippoRAG maps it to *some* candidate with cutoff 0). Duplicates are removed, order is the LLM's.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import json
import re
import unicodedata

from ...llm import parse_json_answer, total_parser

MATCH_THRESHOLD = 0.85
MAX_LITERAL_CHARS = 20_000  # ast.literal_eval on a huge/deep answer is refused (memory/recursion guard)
FIELD = "fact_after_filter"

SYSTEM_PROMPT = """Your input fields are:
1. `question` (str): Query for retrieval
2. `fact_before_filter` (str): Candidate facts to be filtered

Your output fields are:
1. `fact_after_filter` (Fact): Filtered facts in JSON format

All interactions will be structured in the following way, with the appropriate values filled in.

[[ ## question ## ]]
{question}

[[ ## fact_before_filter ## ]]
{fact_before_filter}

[[ ## fact_after_filter ## ]]
{fact_after_filter}        # note: the value you produce must be pareseable according to the following JSON schema: {"type": "object", "properties": {"fact": {"type": "array", "description": "A list of facts, each fact is a list of 3 strings: [subject, predicate, object]", "items": {"type": "array", "items": {"type": "string"}}, "title": "Fact"}}, "required": ["fact"], "title": "Fact"}

[[ ## completed ## ]]

In adhering to this structure, your objective is:
You are a critical component of a high-stakes question-answering system used by top researchers and decision-makers worldwide. Your task is to filter facts based on their relevance to a given query, ensuring that the most crucial information is presented to these stakeholders. The query requires careful analysis and possibly multi-hop reasoning to connect different pieces of information. You must select up to 4 relevant facts from the provided candidate list that have a strong connection to the query, aiding in reasoning and providing an accurate answer. The output should be in JSON format, e.g., {"fact": [["s1", "p1", "o1"], ["s2", "p2", "o2"]]}, and if no facts are relevant, return an empty list, {"fact": []}. The accuracy of your response is paramount, as it will directly impact the decisions made by these high-level stakeholders. You must only use facts from the candidate list and not generate new facts. The future of critical decision-making relies on your ability to accurately filter and present relevant information."""  # noqa: E501

USER_TEMPLATE = """[[ ## question ## ]]
{question}

[[ ## fact_before_filter ## ]]
{fact_before_filter}

Respond with the corresponding output fields, starting with the field `[[ ## fact_after_filter ## ]]` (must be formatted as a valid Python Fact), and then ending with the marker for `[[ ## completed ## ]]`."""  # noqa: E501

ASSISTANT_TEMPLATE = """[[ ## fact_after_filter ## ]]
{fact_after_filter}

[[ ## completed ## ]]"""

FEW_SHOTS: list[tuple[str, list[list[str]], list[list[str]]]] = [
    ("Are Imperial River (Florida) and Amaradia (Dolj) both located in the same country?",
     [["imperial river", "is located in", "florida"], ["imperial river", "is a river in", "united states"],
      ["imperial river", "may refer to", "south america"], ["amaradia", "flows through", "ro ia de amaradia"],
      ["imperial river", "may refer to", "united states"]],
     [["imperial river", "is located in", "florida"], ["imperial river", "is a river in", "united states"],
      ["amaradia", "flows through", "ro ia de amaradia"]]),
    ("When is the director of film The Ancestor's birthday?",
     [["jean jacques annaud", "born on", "1 october 1943"], ["tsui hark", "born on", "15 february 1950"],
      ["pablo trapero", "born on", "4 october 1971"], ["the ancestor", "directed by", "guido brignone"],
      ["benh zeitlin", "born on", "october 14  1982"]],
     [["the ancestor", "directed by", "guido brignone"]]),
    ("In what geographic region is the country where Teafuone is located?",
     [["teafuaniua", "is on the", "east"], ["motuloa", "lies between", "teafuaniua"],
      ["motuloa", "lies between", "teafuanonu"], ["teafuone", "is", "islet"], ["teafuone", "located in", "nukufetau"]],
     [["teafuone", "is", "islet"], ["teafuone", "located in", "nukufetau"]]),
    ("Do both films: Gloria (1980 Film) and A New Life (Film) have the directors from the same country?",
     [["sebasti n lelio watt", "received acclaim for directing", "gloria"],
      ["gloria", "is", "1980 american thriller crime drama film"],
      ["a brand new life", "is directed by", "ounie lecomte"],
      ["gloria", "written and directed by", "john cassavetes"], ["a new life", "directed by", "alan alda"]],
     [["gloria", "is", "1980 american thriller crime drama film"],
      ["gloria", "written and directed by", "john cassavetes"], ["a new life", "directed by", "alan alda"]]),
]


def _facts_json(facts) -> str:
    return json.dumps({"fact": [list(f) for f in facts]}, ensure_ascii=False)


def user_message(question: str, facts) -> str:
    return USER_TEMPLATE.format(question=question, fact_before_filter=_facts_json(facts))


def few_shot_messages() -> list[dict[str, str]]:
    messages = []
    for question, before, after in FEW_SHOTS:
        messages.append({"role": "user", "content": user_message(question, before)})
        answer = ASSISTANT_TEMPLATE.format(fact_after_filter=_facts_json(after))
        messages.append({"role": "assistant", "content": answer})
    return messages


def accepts_history(func) -> bool:
    """True if ``func`` takes ``history_messages`` (by name or through ``**kwargs``)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "history_messages" or p.kind is p.VAR_KEYWORD for p in params)


def inline_prompt(question: str, facts) -> str:
    """The few-shot turns written out before the real question, for LLM functions without history support."""
    turns = [f"{'User' if m['role'] == 'user' else 'Assistant'}:\n{m['content']}" for m in few_shot_messages()]
    return "\n\n".join(turns + [f"User:\n{user_message(question, facts)}"])


# --- parsing ------------------------------------------------------------------------------------------------
_HEADER = re.compile(r"\[\[\s*##\s*(\w+)\s*##\s*\]\]")
_TRIPLE = re.compile(r"""\[\s*(["'])((?:(?!\1).)*)\1\s*,\s*(["'])((?:(?!\3).)*)\3\s*,\s*(["'])((?:(?!\5).)*)\5\s*\]""")


def field_value(text: str, name: str = FIELD) -> str | None:
    """The text after ``[[ ## name ## ]]`` up to the next field header (None if the header is absent)."""
    parts = _HEADER.split(text)  # [before, name1, value1, name2, value2, ...]
    for i in range(1, len(parts) - 1, 2):
        if parts[i] == name:
            return parts[i + 1].strip()
    return None


def _as_facts(value) -> list[list[str]] | None:
    if isinstance(value, dict):
        value = value.get("fact", value.get("facts"))
    if not isinstance(value, (list, tuple)):
        return None
    facts = [[str(x) for x in item] for item in value if isinstance(item, (list, tuple)) and len(item) == 3]
    return facts if facts or not value else None


def _strict_parse(text: str):
    try:
        return _as_facts(json.loads(text))
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
        pass
    if len(text) <= MAX_LITERAL_CHARS:
        try:
            return _as_facts(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return None


@total_parser()
def parse_filter_response(text: str | None) -> list[list[str]] | None:
    """The facts in an LLM answer, ``[]`` for an explicit empty answer, ``None`` if nothing parses."""
    if not text or not text.strip():
        return None
    section = field_value(text)
    for candidate in ([section] if section is not None else []) + [text.strip()]:
        facts = _strict_parse(candidate)
        if facts is not None:
            return facts
    try:
        facts = _as_facts(parse_json_answer(section if section is not None else text))
    except RecursionError:
        facts = None
    if facts is not None:
        return facts
    found = [[m.group(2), m.group(4), m.group(6)] for m in _TRIPLE.finditer(text)]
    return found or None


# --- matching -----------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Case-, whitespace- and punctuation-insensitive, Unicode-preserving key."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(ch).startswith(("P", "S")) else ch for ch in text)
    return " ".join(text.split())


def fact_key(fact) -> str:
    return " | ".join(normalise(str(part)) for part in fact)


def match_facts(returned: list[list[str]], candidates: list, limit: int) -> tuple[list[int], int]:
    """Candidate indices for the returned facts (LLM order, deduplicated, at most ``limit``) and #invented."""
    keys = [fact_key(c) for c in candidates]
    exact = {k: i for i, k in reversed(list(enumerate(keys)))}
    chosen, invented = [], 0
    for fact in returned:
        key = fact_key(fact)
        index = exact.get(key)
        if index is None:
            ratios = [difflib.SequenceMatcher(None, key, k).ratio() for k in keys]
            best = max(range(len(keys)), key=ratios.__getitem__, default=None)
            index = best if best is not None and ratios[best] >= MATCH_THRESHOLD else None
        if index is None:
            invented += 1
        elif index not in chosen:
            chosen.append(index)
    return chosen[:limit], invented


# --- the LLM step -------------------------------------------------------------------------------------------
STEP = "hipporag_filter"


async def recognise(ctx, candidates: list) -> list[int] | None:
    """Ask the LLM which candidate facts to keep; candidate indices, or ``None`` to use them all (fallback).

    ``None`` is returned, and the fallback recorded in ``ctx.retrieval``, when no LLM is configured, the call fails
    (both recorded by ``ctx.llm``) or the answer does not parse. An empty list means the LLM kept nothing.
    """
    question = ctx.query
    if accepts_history(ctx.rag.llm_model_func):
        answer = await ctx.llm(user_message(question, candidates), step=STEP, system_prompt=SYSTEM_PROMPT,
                               history_messages=few_shot_messages())
    else:
        answer = await ctx.llm(inline_prompt(question, candidates), step=STEP, system_prompt=SYSTEM_PROMPT)
    if answer is None:
        return None
    returned = parse_filter_response(answer)
    if returned is None:
        ctx.retrieval.record_fallback(STEP, "unparseable LLM answer: unfiltered top facts used")
        return None
    kept, invented = match_facts(returned, candidates, ctx.param.max_filtered_facts)
    if invented:
        ctx.retrieval.metadata["hipporag_invented_facts"] = invented
    return kept
