"""LightRAG's extraction-text normalisers, memoised: same results, each distinct string normalised once.

``lightrag.operate`` looks up two pure string functions as module globals each time it parses an extraction record:
``sanitize_and_normalize_extracted_text(input_text, remove_inner_quotes=False)`` (types, descriptions, keywords) and
``normalize_entity_name(input_text)`` (names). Each runs about fifteen regular-expression and translate passes.

Deleting a document re-parses the cached extraction of every chunk that shares an entity with it
(``rebuild_knowledge_from_chunks``): 39 chunks and 3,387 calls for one document of a 3,000-passage index, but only
729 distinct strings, because a hub name recurs in every chunk and the offline extractor gives an entity and its
relations the same sentence as description. Those calls were half of LightRAG's deletion time. Inserts parse the same
rows, with the same repeats.

The memo is a bounded LRU per function (``MEMO_SIZE`` strings, a few MB at most), for ``str`` arguments only; any
other argument goes to LightRAG's function unchanged. It serves every instance in the process, as the functions are
pure. Version-checked through :func:`register_symbols`.
"""

from __future__ import annotations

from functools import lru_cache

from .private import register_symbols, wrap_once

_SYMBOLS = [
    ("lightrag.operate", "sanitize_and_normalize_extracted_text", 2),
    ("lightrag.operate", "normalize_entity_name", 1),
]
register_symbols(*_SYMBOLS)

MEMO_SIZE = 16384  # distinct strings per function; one deletion at 3,000 passages needs under a thousand


def _memo_text(original):
    cached = lru_cache(maxsize=MEMO_SIZE)(original)

    def sanitize_and_normalize_extracted_text(input_text, remove_inner_quotes=False):
        if type(input_text) is str and type(remove_inner_quotes) is bool:
            return cached(input_text, remove_inner_quotes)
        return original(input_text, remove_inner_quotes=remove_inner_quotes)

    sanitize_and_normalize_extracted_text.cache = cached
    return sanitize_and_normalize_extracted_text


def _memo_name(original):
    cached = lru_cache(maxsize=MEMO_SIZE)(original)

    def normalize_entity_name(input_text):
        return cached(input_text) if type(input_text) is str else original(input_text)

    normalize_entity_name.cache = cached
    return normalize_entity_name


def _install() -> None:
    from lightrag import operate

    wrap_once(operate, "sanitize_and_normalize_extracted_text", _memo_text)
    wrap_once(operate, "normalize_entity_name", _memo_name)


_install()
