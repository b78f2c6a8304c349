"""LightRAG's extraction-record parsing made cheap, same results: the text normalisers memoised (each distinct
string normalised once), the delimiter repair skipped where it cannot change a record.

``lightrag.operate`` looks up two pure string functions as module globals each time it parses an extraction record:
``sanitize_and_normalize_extracted_text(input_text, remove_inner_quotes=False)`` (types, descriptions, keywords) and
``normalize_entity_name(input_text)`` (names). Each runs about fifteen regular-expression and translate passes.

Deleting a document re-parses the cached extraction of every chunk that shares an entity with it
(``rebuild_knowledge_from_chunks``): 39 chunks and 3,387 calls for one document of a 3,000-passage index, but only
729 distinct strings, because a hub name recurs in every chunk and the offline extractor gives an entity and its
relations the same sentence as description. Those calls were half of LightRAG's deletion time. Inserts parse the same
rows, with the same repeats.

The memo is a bounded LRU per function (``MEMO_SIZE`` strings, a few MB at most), for ``str`` arguments only; any
other argument goes to LightRAG's function unchanged. It serves only a PrismRAG's inserts and deletions (while its
seam is active, :data:`private.ACTIVE_SEAM`); a plain LightRAG calls LightRAG's functions. Version-checked through
:func:`register_symbols`.

The same parse runs ``fix_tuple_delimiter_corruption(record, core, delimiter)`` on every record: thirteen regular
expressions repairing an LLM's mangled ``<|#|>``, a third of what re-parsing cost a deletion. Every one of them needs
a ``<``, ``>`` or ``|`` to match, and where those occur only inside well-formed delimiters each either fails or
replaces a delimiter by itself. So a record whose text outside its delimiters has none of the three is returned as it
is (the offline extractor's records, and most of an LLM's); any other record goes through LightRAG's function.
``split_string_by_multi_markers``, four calls per record, escaped and joined its markers into a pattern each time;
it now compiles each list of markers once (the same pattern, so the same parts).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .private import ACTIVE_SEAM, register_symbols, wrap_once

_SYMBOLS = [
    ("lightrag.operate", "sanitize_and_normalize_extracted_text", 2),
    ("lightrag.operate", "normalize_entity_name", 1),
    ("lightrag.operate", "fix_tuple_delimiter_corruption", 3),
    ("lightrag.operate", "split_string_by_multi_markers", 2),
]
register_symbols(*_SYMBOLS)

MEMO_SIZE = 16384  # distinct strings per function; one deletion at 3,000 passages needs under a thousand


def _memo_text(original):
    cached = lru_cache(maxsize=MEMO_SIZE)(original)

    def sanitize_and_normalize_extracted_text(input_text, remove_inner_quotes=False):
        if type(input_text) is str and type(remove_inner_quotes) is bool and ACTIVE_SEAM.get() is not None:
            return cached(input_text, remove_inner_quotes)
        return original(input_text, remove_inner_quotes=remove_inner_quotes)

    sanitize_and_normalize_extracted_text.cache = cached
    return sanitize_and_normalize_extracted_text


def _memo_name(original):
    cached = lru_cache(maxsize=MEMO_SIZE)(original)

    def normalize_entity_name(input_text):
        return cached(input_text) if type(input_text) is str and ACTIVE_SEAM.get() is not None \
            else original(input_text)

    normalize_entity_name.cache = cached
    return normalize_entity_name


def _fast_delimiter_fix(original):
    def fix_tuple_delimiter_corruption(record, delimiter_core, tuple_delimiter):
        if (ACTIVE_SEAM.get() is not None and type(record) is str and type(delimiter_core) is str and delimiter_core
                and tuple_delimiter == f"<|{delimiter_core}|>" and not _has_delimiter_marks(delimiter_core)
                and not _has_delimiter_marks(record.replace(tuple_delimiter, ""))):
            return record  # nothing any of its patterns could change (module doc)
        return original(record, delimiter_core, tuple_delimiter)

    return fix_tuple_delimiter_corruption


def _has_delimiter_marks(text: str) -> bool:
    return "<" in text or ">" in text or "|" in text


@lru_cache(maxsize=64)
def _marker_pattern(markers: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(re.escape(marker) for marker in markers))  # LightRAG's pattern


def _compiled_split(original):
    def split_string_by_multi_markers(content, markers):
        if (ACTIVE_SEAM.get() is not None and type(content) is str and type(markers) is list and markers
                and all(type(m) is str for m in markers)):
            return [part for part in map(str.strip, _marker_pattern(tuple(markers)).split(content)) if part]
        return original(content, markers)

    return split_string_by_multi_markers


def _install() -> None:
    from lightrag import operate

    wrap_once(operate, "sanitize_and_normalize_extracted_text", _memo_text)
    wrap_once(operate, "normalize_entity_name", _memo_name)
    wrap_once(operate, "fix_tuple_delimiter_corruption", _fast_delimiter_fix)
    wrap_once(operate, "split_string_by_multi_markers", _compiled_split)


_install()
