import random

import pytest

from lightrag_prism.insert.timestamps.markers import (
    TIMESTAMP_SUMMARY_INSTRUCTION,
    deterministic_concat,
    extract_timestamps,
    leading_timestamp,
    order_fragments_chronologically,
    prefix_description,
    split_fragments,
    timestamp_sort_key,
    validate_timestamps,
    verify_timestamps_kept,
)


def test_prefix_format_and_idempotence():
    once = prefix_description("Apple reported strong iPhone sales", "2024-Q3")
    assert once == "[Time: 2024-Q3] Apple reported strong iPhone sales"
    assert prefix_description(once, "2024-Q3") == once
    assert prefix_description(prefix_description(once, "2024-Q3"), " 2024-Q3 ") == once


def test_prefix_replaces_different_and_stacked_prefixes():
    assert prefix_description("[Time: 2024-Q2] x", "2024-Q3") == "[Time: 2024-Q3] x"
    assert prefix_description("[Time: a] [Time: b]  x", "c") == "[Time: c] x"
    assert prefix_description("", "2024") == "" and prefix_description("   ", "2024") == ""
    assert prefix_description("x [Time: 2023] y", "2024") == "[Time: 2024] x [Time: 2023] y"  # only leading ones


@pytest.mark.parametrize("bad", ["", "  ", None, 3, "2024]", "a\nb"])
def test_prefix_rejects_bad_timestamp(bad):
    with pytest.raises(ValueError):
        prefix_description("x", bad)


def test_split_fragments():
    assert split_fragments("a<SEP> b <SEP><SEP>  ") == ["a", "b"]
    assert split_fragments("a||b", sep="||") == ["a", "b"]
    assert split_fragments("") == []


def test_sort_key_orders_mixed_granularities():
    stamps = ["2024-05", "2023", "2024-Q3", "2024-H1", "2024-03-01", "2024", "Q1 2024", "2024-01-01", "FY2022",
              "2024-03-01T09:30", "someday", "2024-Q1", "2024-01"]
    ordered = sorted(stamps, key=timestamp_sort_key)
    assert ordered == ["FY2022", "2023", "2024", "2024-H1", "Q1 2024", "2024-Q1", "2024-01", "2024-01-01",
                       "2024-03-01", "2024-03-01T09:30", "2024-05", "2024-Q3", "someday"]


def test_sort_key_unrecognised_fall_back_to_string_order():
    assert sorted(["zeta", "alpha", "2024-13"], key=timestamp_sort_key) == ["2024-13", "alpha", "zeta"]


def test_order_fragments_is_stable_and_puts_undated_first():
    frags = ["[Time: 2024-Q3] c", "background 1", "[Time: 2024-Q2] b", "[Time: 2024-Q3] d", "background 2",
             "[Time: 2023] a"]
    assert order_fragments_chronologically(frags) == [
        "background 1", "background 2", "[Time: 2023] a", "[Time: 2024-Q2] b", "[Time: 2024-Q3] c",
        "[Time: 2024-Q3] d"]


def test_order_fragments_random_permutations_agree():
    frags = [prefix_description(f"fact {i}", ts) for i, ts in enumerate(["2021", "2022-H2", "2023-Q1", "2023-02-10"])]
    rng = random.Random(0)
    for _ in range(20):
        shuffled = frags[:]
        rng.shuffle(shuffled)
        assert order_fragments_chronologically(shuffled) == frags


def test_extract_and_verify():
    summary = "[Time: 2024-Q2] up. Later [Time: 2024-Q3] down, again [Time: 2024-Q2]."
    assert extract_timestamps(summary) == ["2024-Q2", "2024-Q3"]
    assert leading_timestamp("no prefix") is None
    frags = ["[Time: 2024-Q4] x", "[Time: 2024-Q2] y", "[Time: 2024-Q1] z", "plain"]
    assert verify_timestamps_kept(frags, summary) == ["2024-Q1", "2024-Q4"]
    assert verify_timestamps_kept(frags[1:2], summary) == []


def test_deterministic_concat_keeps_everything_in_order():
    frags = ["[Time: 2024-Q3] c", "[Time: 2024-Q2] b", "[Time: 2024-Q3] c", "bg"]
    assert deterministic_concat(frags) == "bg\n[Time: 2024-Q2] b\n[Time: 2024-Q3] c"
    assert deterministic_concat(frags, sep="<SEP>").split("<SEP>")[1] == "[Time: 2024-Q2] b"
    assert verify_timestamps_kept(frags, deterministic_concat(frags)) == []


def test_validate_timestamps():
    assert validate_timestamps([" 2024-Q3 ", "2024"], 2) == ["2024-Q3", "2024"]
    assert validate_timestamps("2024", 1) == ["2024"]
    cases = [("2024", 2, "single timestamp"), (["a"], 2, "1 timestamps for 2"), ({"a": 1}, 1, "list"),
             (["a", ""], 2, r"timestamps\[1\]"), (["a", 5], 2, r"timestamps\[1\]"), (None, 1, "list")]
    for value, n, message in cases:
        with pytest.raises(ValueError, match=message):
            validate_timestamps(value, n)


def test_summary_instruction_mentions_marker():
    assert "[Time: " in TIMESTAMP_SUMMARY_INSTRUCTION and "chronological" in TIMESTAMP_SUMMARY_INSTRUCTION
