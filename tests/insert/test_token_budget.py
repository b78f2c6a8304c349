import random

import pytest

from lightrag_prism.insert.tables.token_budget import count_tokens, head_tokens, split_by_tokens, tail_tokens

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 30,
    "台積電營業收入成長鑫龘齉爨，蘋果公司第三季營收。" * 20,
    "emoji 🙂🚀 mixed ünïcödé — text\n\n" * 25,
    "x" * 500,
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("cap", [1, 3, 17, 64])
def test_split_by_tokens_tiles_exactly_within_cap(tokenizer, text, cap):
    spans = split_by_tokens(tokenizer, text, cap)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    for s, e in spans:
        assert e > s
        # one character may exceed a tiny cap (progress beats the budget), nothing else may
        assert count_tokens(tokenizer, text[s:e]) <= cap or e - s == 1


def test_split_by_tokens_subrange_and_bad_cap(tokenizer):
    text = "aaa bbb ccc ddd eee fff"
    assert split_by_tokens(tokenizer, text, 100, 4, 11) == [(4, 11)]
    with pytest.raises(ValueError, match="max_tokens"):
        split_by_tokens(tokenizer, text, 0)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("n", [0, 1, 5, 40, 10_000])
def test_head_and_tail_are_exact_slices_within_budget(tokenizer, text, n):
    head, tail = head_tokens(tokenizer, text, n), tail_tokens(tokenizer, text, n)
    assert text.startswith(head) and text.endswith(tail)
    assert count_tokens(tokenizer, head) <= n and count_tokens(tokenizer, tail) <= n
    assert "\ufffd" not in head + tail
    if n >= count_tokens(tokenizer, text):
        assert head == text == tail
    elif n >= 5:
        assert head and tail  # a real budget yields real context


def test_head_tokens_takes_close_to_budget(tokenizer):
    rng = random.Random(0)
    text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(300))
    assert count_tokens(tokenizer, head_tokens(tokenizer, text, 50)) >= 48
    assert count_tokens(tokenizer, tail_tokens(tokenizer, text, 50)) >= 48
