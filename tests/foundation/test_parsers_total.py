"""Every LLM-answer parser is total: any string gives a parsed value or its documented fallback, never an exception.

Hostile answers seen from real endpoints and fault injection: deep nesting (``'[' * 5000`` made ``json`` recurse),
huge answers, unbalanced brackets and quotes (a scan per opener made ``parse_listwise_answer`` quadratic), any
Unicode. Hypothesis generates them; the ``deadline`` catches a parser that turns slow again.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightrag_prism.insert.entity_types.discovery import parse_type_answer
from lightrag_prism.insert.merging.agentic import parse_decision
from lightrag_prism.llm import MAX_ANSWER_CHARS, parse_json_answer
from lightrag_prism.rerankers.parsing import ListwiseAnswer, parse_listwise_answer, parse_pairwise_verdict
from lightrag_prism.retrievers.ensemble.mode import parse_expansion
from lightrag_prism.retrievers.fidelis.prompts import (
    BeamChoice, Plan, parse_index_list, parse_plan, parse_yes_no, validate_beam_choice,
)
from lightrag_prism.retrievers.hipporag.filter import parse_filter_response
from lightrag_prism.retrievers.recognition import parse_irrelevant

# examples per parser; PRISM_FUZZ_EXAMPLES=2500 for a long fuzz run
FUZZ_EXAMPLES = int(os.environ.get("PRISM_FUZZ_EXAMPLES", "25"))
# parser, the types its result may have (None: the fallback)
PARSERS = {
    "parse_json_answer": (parse_json_answer, (object,)),
    "parse_listwise_answer": (parse_listwise_answer, (ListwiseAnswer, type(None))),
    "parse_pairwise_verdict": (parse_pairwise_verdict, (str, type(None))),
    "parse_filter_response": (parse_filter_response, (list, type(None))),
    "parse_expansion": (parse_expansion, (list, type(None))),
    "parse_irrelevant": (lambda text: parse_irrelevant(text, {"E1", "R2", "C3"}), (set, type(None))),
    "parse_plan": (parse_plan, (Plan, type(None))),
    "parse_index_list": (parse_index_list, (list, type(None))),
    "validate_beam_choice": (lambda text: validate_beam_choice(text, 5, 2), (BeamChoice,)),
    "parse_yes_no": (parse_yes_no, (bool,)),
    "parse_decision": (parse_decision, (dict, type(None))),
    "parse_type_answer": (parse_type_answer, (list, type(None))),
}

BRACKETS = st.sampled_from(["[", "{", '{"a":', '{"ranking": [', "[[", '"', "\\", "```json\n"])
nested = st.builds(lambda opener, depth, tail: opener * depth + tail, BRACKETS,
                   st.integers(min_value=100, max_value=20_000), st.sampled_from(["", "]", "}", "1]}", '"x"']))
huge = st.builds(lambda unit, n: (unit * n)[:MAX_ANSWER_CHARS + 10], st.sampled_from(
    ["x", "é東京", "1,", "[1, 2], ", '{"index": 1}, ', "[[ ## fact_after_filter ## ]]\n", " ", "\n"]),
    st.integers(min_value=1_000, max_value=MAX_ANSWER_CHARS // 2))
jsonish = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
                       lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                                     max_size=5),
                       max_leaves=20).map(repr)
answers = st.one_of(st.text(), nested, huge, jsonish, st.none())


def check_total(name: str, text) -> None:
    parse, types = PARSERS[name]
    result = parse(text)
    assert isinstance(result, types), (name, type(result))


def _property(name: str):
    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(answers)
    def test(text):
        check_total(name, text)

    test.__name__ = f"test_{name}_is_total"
    return test


for _name in PARSERS:
    globals()[f"test_{_name}_is_total"] = _property(_name)


def test_deep_nesting_gives_the_fallback_not_recursion_error():
    for opener in ("[", "{", '{"a":'):
        text = opener * 5000
        assert parse_json_answer(text) is None
        assert parse_listwise_answer(text) is None
        assert parse_index_list(text) is None
        assert validate_beam_choice(text, 4, 2).source == "score"


def test_answers_over_the_cap_give_the_fallback_and_short_ones_still_parse():
    assert parse_json_answer('{"a": 1}') == {"a": 1}
    assert parse_json_answer('{"a": 1}' + " " * MAX_ANSWER_CHARS) is None
    assert parse_yes_no("Yes.") is True and parse_yes_no("yes" * MAX_ANSWER_CHARS) is False
    assert parse_listwise_answer('{"ranking": [2, 1]}').ranking == [2, 1]
