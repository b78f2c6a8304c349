"""Character-safe token budgeting helpers.

All functions take any ``tokenizer`` with ``encode(str) -> list[int]`` and
``decode(list[int]) -> str`` (for example ``lightrag.utils.Tokenizer``).

Why not just slice token lists: byte-level BPE tokenizers (tiktoken) can cut a
multi-byte character (CJK, emoji) in two, and decoding half a character yields
U+FFFD.  Every helper here returns exact slices of the input string, so no
character is ever mangled or lost.
"""

from __future__ import annotations

from typing import Protocol

_REPLACEMENT = "\ufffd"


class TokenizerLike(Protocol):
    """Anything with ``encode``/``decode`` (duck-typed, like LightRAG's Tokenizer)."""

    def encode(self, content: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


def count_tokens(tokenizer: TokenizerLike, text: str) -> int:
    """Number of tokens of ``text`` (0 for the empty string)."""
    return len(tokenizer.encode(text)) if text else 0


def _fits(tokenizer: TokenizerLike, text: str, start: int, end: int, max_tokens: int) -> bool:
    return count_tokens(tokenizer, text[start:end]) <= max_tokens


def _fit_end(tokenizer: TokenizerLike, text: str, start: int, end: int, max_tokens: int) -> int:
    """A cut in ``(start, end]`` such that ``text[start:cut]`` fits ``max_tokens``.

    Fast path: decode the first ``max_tokens`` tokens of a window and verify that
    prefix with one count (two encodes per cut).  Fallback: binary search.  Always
    advances by at least one character, even when a single character is longer
    than ``max_tokens`` (progress beats the budget).
    """
    window = min(end - start, 8 * max_tokens + 16)
    while True:
        ids = tokenizer.encode(text[start : start + window])
        if len(ids) > max_tokens:
            break
        if start + window >= end:
            return end
        window = min(end - start, 2 * window)
    guess = start + len(tokenizer.decode(ids[:max_tokens]).rstrip(_REPLACEMENT))
    if start < guess <= end and text[start:guess] == tokenizer.decode(ids[:max_tokens])[: guess - start]:
        if _fits(tokenizer, text, start, guess, max_tokens):
            return guess
    lo, hi = start + 1, min(end, start + window)  # text[start:hi] is known to be too long
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(tokenizer, text, start, mid, max_tokens):
            lo = mid
        else:
            hi = mid
    return lo


def _prefer_whitespace(text: str, start: int, cut: int) -> int:
    """Move ``cut`` back to just after the last whitespace in the second half of the window."""
    floor = start + (cut - start) // 2
    for i in range(cut - 1, floor, -1):
        if text[i].isspace():
            return i + 1
    return cut


def split_by_tokens(
    tokenizer: TokenizerLike,
    text: str,
    max_tokens: int,
    start: int = 0,
    end: int | None = None,
) -> list[tuple[int, int]]:
    """Cover ``text[start:end]`` with contiguous ``(start, end)`` spans of ≤ ``max_tokens`` tokens.

    Spans tile the range exactly (no gap, no overlap), cuts prefer whitespace in the
    second half of a window, and a single character longer than ``max_tokens`` still
    becomes its own span.
    """
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        cut = _fit_end(tokenizer, text, pos, end, max_tokens)
        if cut < end:
            cut = _prefer_whitespace(text, pos, cut)
        spans.append((pos, cut))
        pos = cut
    return spans


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def head_tokens(tokenizer: TokenizerLike, text: str, n_tokens: int) -> str:
    """Longest prefix of ``text`` made of its first ≤ ``n_tokens`` tokens (cut on a token boundary)."""
    if n_tokens <= 0 or not text:
        return ""
    window = min(len(text), 8 * n_tokens + 16)
    while True:
        ids = tokenizer.encode(text[:window])
        if len(ids) > n_tokens or window >= len(text):
            break
        window = min(len(text), 2 * window)
    ids = ids[:n_tokens]
    while ids:
        decoded = tokenizer.decode(ids).rstrip(_REPLACEMENT)
        head = text[: _common_prefix_len(decoded, text)]
        if count_tokens(tokenizer, head) <= n_tokens:
            return head
        ids = ids[:-1]  # re-tokenising the cut text produced more tokens: shrink
    return ""


def tail_tokens(tokenizer: TokenizerLike, text: str, n_tokens: int) -> str:
    """Longest suffix of ``text`` made of its last ≤ ``n_tokens`` tokens (cut on a token boundary)."""
    if n_tokens <= 0 or not text:
        return ""
    window = min(len(text), 8 * n_tokens + 16)
    while True:
        ids = tokenizer.encode(text[-window:])
        if len(ids) > n_tokens or window >= len(text):
            break
        window = min(len(text), 2 * window)
    ids = ids[-n_tokens:]
    while ids:
        decoded = tokenizer.decode(ids).lstrip(_REPLACEMENT)
        k = _common_prefix_len(decoded[::-1], text[-len(decoded) :][::-1]) if decoded else 0
        tail = text[len(text) - k :] if k else ""
        if count_tokens(tokenizer, tail) <= n_tokens:
            return tail
        ids = ids[1:]
    return ""
