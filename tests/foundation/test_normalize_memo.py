"""patches/normalize_memo.py: LightRAG's extraction normalisers memoised give LightRAG's own results, and serve only
a PrismRAG's runs (its seam active)."""

from __future__ import annotations

import asyncio
import random

import pytest
from lightrag import operate

from lightrag_prism.patches import normalize_memo, seam_active

TRICKY = [
    "", "  ", "Alan Turing", '"Alan Turing"', "'quoted' inside 'twice'", "<p>Paris</p><br/>", "ＡＢＣ１２３",
    "东京 大学", "东京 University", "“Tokyo”", "《三体》", "O'Neil", "12", "1.2", "1.2.3.4.5.6", "1\u202fkm",
    "a\u202fb", "non\u00a0breaking", "（note）—dash", "Thomas C. Südhof", "x" * 5000, "line\nbreak\ttab",
    "\ud800 lone surrogate",
]


@pytest.fixture(autouse=True)
def a_prism_run():
    """The tests below run as inside a PrismRAG's insert (a seam active); the last one as a plain LightRAG."""
    with seam_active(object()):
        yield


@pytest.mark.parametrize("text", TRICKY)
def test_the_memo_returns_what_lightrag_returns(text):
    memo_text, memo_name = operate.sanitize_and_normalize_extracted_text, operate.normalize_entity_name
    original_text, original_name = memo_text.__wrapped__, memo_name.__wrapped__
    for _ in range(2):  # the second call is served from the memo
        assert memo_name(text) == original_name(text)
        for inner in (False, True):
            assert memo_text(text, inner) == original_text(text, remove_inner_quotes=inner)
            assert memo_text(text, remove_inner_quotes=inner) == original_text(text, remove_inner_quotes=inner)


def test_other_arguments_reach_lightrag_unchanged():
    memo_text, memo_name = operate.sanitize_and_normalize_extracted_text, operate.normalize_entity_name
    assert memo_text(None) == memo_text.__wrapped__(None) == ""
    with pytest.raises(AttributeError):
        memo_text(5)
    with pytest.raises(AttributeError):
        memo_name(5)


def _rows() -> str:
    sentence = "Teutberga was a queen of Lotharingia by marriage to Lothair II."
    rows = [f"entity<|#|>{name}<|#|>person<|#|>{sentence}" for name in ("Teutberga", "Lothair II", '"Lotharingia"')]
    rows += [f"relation<|#|>Teutberga<|#|>{other}<|#|>married, queen<|#|>{sentence}"
             for other in ("Lothair II", "Lotharingia")]
    rows += ["entity<|#|>东京 大学<|#|>organization<|#|>（东京）—a university", "<|COMPLETE|>"]
    return "\n".join(rows)


def test_a_parse_with_the_memo_equals_the_parse_without_it_and_uses_it(monkeypatch):
    text, name = operate.sanitize_and_normalize_extracted_text, operate.normalize_entity_name

    def parse():
        return asyncio.run(operate._process_extraction_result(_rows(), "chunk-1", 1700000000, "doc.txt"))

    text.cache.cache_clear()
    memoised = parse()
    info = text.cache.cache_info()
    assert info.hits >= 4  # the shared sentence is normalised once, then served five more times
    assert name.cache.cache_info().misses >= 4
    monkeypatch.setattr(operate, "sanitize_and_normalize_extracted_text", text.__wrapped__)
    monkeypatch.setattr(operate, "normalize_entity_name", name.__wrapped__)
    assert parse() == memoised
    assert set(memoised[0]) == {"Teutberga", "Lothair II", "Lotharingia", "东京大学"}


def test_the_memo_is_bounded_and_installed_once():
    from lightrag_prism.patches.private import wrap_once

    memo = operate.sanitize_and_normalize_extracted_text
    assert memo.cache.cache_info().maxsize == normalize_memo.MEMO_SIZE
    assert operate.normalize_entity_name.cache.cache_info().maxsize == normalize_memo.MEMO_SIZE
    wrap_once(operate, "sanitize_and_normalize_extracted_text", normalize_memo._memo_text)
    assert operate.sanitize_and_normalize_extracted_text is memo


DELIMITER_PIECES = ["<|#|>", "<|#|>", "<", ">", "|", "#", "\\", ":", " ", "a", "Paris", "||", "<|", "|>", "\n"]


def _random_record(rng: random.Random) -> str:
    return "".join(rng.choice(DELIMITER_PIECES) for _ in range(rng.randint(0, 14)))


def test_the_delimiter_repair_gives_lightrags_result_on_any_record():
    fast = operate.fix_tuple_delimiter_corruption
    original = fast.__wrapped__
    rng = random.Random(7)
    records = [_random_record(rng) for _ in range(20_000)] + _rows().split("\n")
    for core, delimiter in (("#", "<|#|>"), ("SEP", "<|SEP|>"), ("#", "<|#|>x")):
        for record in records:
            record = record.replace("<|#|>", delimiter) if core != "#" else record
            assert fast(record, core, delimiter) == original(record, core, delimiter), (record, core, delimiter)


def test_the_delimiter_repair_skips_only_records_it_cannot_change():
    calls = []
    fix = normalize_memo._fast_delimiter_fix(lambda *args: calls.append(args) or args[0])
    clean = "entity<|#|>Alan Turing<|#|>person<|#|>A mathematician (1912-1954), see #3: a, b."
    assert fix(clean, "#", "<|#|>") == clean and calls == []
    for corrupt in ("entity<|#|Alan", "entity<|#|>Alan<|#|>|person", "a||#||b", "x <|> y", "a|b"):
        fix(corrupt, "#", "<|#|>")
        assert calls[-1] == (corrupt, "#", "<|#|>")
    fix(clean, "#", "<#>")  # not the delimiter the core names: LightRAG decides
    assert len(calls) == 6


def test_the_compiled_split_gives_lightrags_parts():
    split = operate.split_string_by_multi_markers
    original = split.__wrapped__
    rng = random.Random(11)
    marker_lists = [["\n", "<|COMPLETE|>", "<|complete|>"], ["<|#|>"], ["<|#|>entity<|#|>"], ["a", "|", "."], [""],
                    [], ["<|#|>relationship<|#|>", "<|#|>relation<|#|>"]]
    for _ in range(5_000):
        content = "".join(rng.choice(DELIMITER_PIECES + ["entity", "relation", "\t", "."]) for _ in range(rng.randint(0, 12)))
        for markers in marker_lists:
            assert split(content, markers) == original(content, markers), (content, markers)
    assert split(None, ["x"]) == original(None, ["x"]) == []
    assert split(_rows(), ["\n"]) == original(_rows(), ["\n"])


def test_a_plain_lightrags_parse_calls_lightrags_functions():
    text, split = operate.sanitize_and_normalize_extracted_text, operate.split_string_by_multi_markers
    calls = []
    with seam_active(None):
        text.cache.cache_clear()
        result = asyncio.run(operate._process_extraction_result(_rows(), "chunk-1", 1700000000, "doc.txt"))
        assert text.cache.cache_info().currsize == 0  # nothing memoised outside a PrismRAG's run
        fix = normalize_memo._fast_delimiter_fix(lambda *args: calls.append(args) or args[0])
        clean = "entity<|#|>Alan Turing<|#|>person<|#|>A mathematician."
        assert fix(clean, "#", "<|#|>") == clean and calls == [(clean, "#", "<|#|>")]  # LightRAG's own repair
        assert split("a<|#|>b", ["<|#|>"]) == split.__wrapped__("a<|#|>b", ["<|#|>"])
    assert set(result[0]) == {"Teutberga", "Lothair II", "Lotharingia", "东京大学"}
