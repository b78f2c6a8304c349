"""Recognition-memory filter: prompt shape, answer parsing (never eval) and matching back to candidates."""

from __future__ import annotations

import json

import pytest

from lightrag_prism.retrievers.hipporag.filter import (
    FEW_SHOTS,
    SYSTEM_PROMPT,
    accepts_history,
    few_shot_messages,
    field_value,
    inline_prompt,
    match_facts,
    normalise,
    parse_filter_response,
    user_message,
)
from tests.scripted_server import GARBAGE

CANDIDATES = [("Thomas C. Südhof", "works at", "Stanford University"), ("東京", "capital of", "日本"),
              ("The Ancestor", "directed by", "Guido Brignone"), ("Gloria", "is", "1980 film")]


def dspy_answer(payload: str) -> str:
    return f"[[ ## fact_after_filter ## ]]\n{payload}\n\n[[ ## completed ## ]]"


def test_prompt_is_the_seed_dspy_program():
    assert SYSTEM_PROMPT.startswith("Your input fields are:")
    assert "select up to 4 relevant facts" in SYSTEM_PROMPT
    messages = few_shot_messages()
    assert [m["role"] for m in messages] == ["user", "assistant"] * 4 and len(FEW_SHOTS) == 4
    assert messages[2]["content"].startswith("[[ ## question ## ]]\nWhen is the director of film The Ancestor's")
    assert json.loads(field_value(messages[3]["content"])) == {"fact": [["the ancestor", "directed by",
                                                                        "guido brignone"]]}
    user = user_message("Q?", CANDIDATES[:1])
    assert "[[ ## fact_before_filter ## ]]\n{\"fact\": [[\"Thomas C. Südhof\"" in user  # Unicode kept, not escaped
    assert user.endswith("and then ending with the marker for `[[ ## completed ## ]]`.")
    assert inline_prompt("Q?", CANDIDATES).count("[[ ## question ## ]]") == 5


def test_accepts_history():
    async def with_history(prompt, system_prompt=None, history_messages=None): ...
    async def with_kwargs(prompt, **kwargs): ...
    async def bare(prompt, system_prompt=None): ...
    assert accepts_history(with_history) and accepts_history(with_kwargs) and not accepts_history(bare)


@pytest.mark.parametrize("answer, expected", [
    (dspy_answer('{"fact": [["a", "b", "c"]]}'), [["a", "b", "c"]]),  # JSON in the field
    ('{"fact": [["a", "b", "c"]]}', [["a", "b", "c"]]),  # bare JSON
    (dspy_answer("{'fact': [('a', 'b', 'c')]}"), [["a", "b", "c"]]),  # Python literal
    (dspy_answer('{"fact": []}'), []),  # explicit empty answer
    ('Sure! Here you go:\n```json\n{"fact": [["a", "b", "c"]]}\n```', [["a", "b", "c"]]),  # fenced JSON
    ('[[ ## fact_after_filter ## ]]\n{"fact": [["a", "b", "c"], ["d", "e"', [["a", "b", "c"]]),  # truncated
    ("facts: ['東京', 'capital of', '日本'] and done", [["東京", "capital of", "日本"]]),
    (dspy_answer('{"fact": [["a", "b"]]}'), None),  # wrong arity only
    (GARBAGE, None), ("", None), (None, None),
])
def test_parse_filter_response(answer, expected):
    assert parse_filter_response(answer) == expected


def test_parser_never_evaluates_code():
    hostile = dspy_answer("__import__('os').system('echo pwned')")
    assert parse_filter_response(hostile) is None
    assert parse_filter_response(dspy_answer("[" * 5000 + "]" * 5000)) is None  # deep nesting is refused


def test_normalise_is_unicode_preserving():
    assert normalise("  Thomas C.  SÜDHOF! ") == "thomas c südhof"
    assert normalise("東京（とうきょう）") == "東京 とうきょう"
    assert normalise("Straße") == normalise("STRASSE")  # case-folded


def test_match_exact_normalised_similar_invented_and_dedup():
    returned = [["the ancestor", "directed by", "guido brignone"],  # normalised exact
                ["Thomas C Sudhof", "works at", "Stanford University"],  # similar (ratio >= 0.85)
                ["東京", "capital of", "日本"],  # exact
                ["The Ancestor", "directed by", "Guido Brignone."],  # duplicate of the first
                ["Paris", "capital of", "France"]]  # invented: dropped
    kept, invented = match_facts(returned, CANDIDATES, limit=4)
    assert kept == [2, 0, 1]
    assert invented == 1
    assert match_facts(returned, CANDIDATES, limit=2)[0] == [2, 0]
    assert match_facts([["Gloria", "is", "a 2013 Chilean film"]], CANDIDATES, limit=4) == ([], 1)
