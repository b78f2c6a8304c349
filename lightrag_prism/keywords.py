"""Offline query keywords: a documented non-LLM stand-in for LightRAG's keyword-extraction LLM call.

LightRAG's local/global/hybrid/mix modes embed two keyword strings: low-level keywords (specific entities, matched
against the entity vector store) and high-level keywords (themes, matched against the relation vector store).
Without an LLM we derive them from the query text:

* low-level: entity-like spans (runs of capitalised words, quoted phrases, numbers), in query order, followed by
  the remaining content words;
* high-level: the query's content words (stop words and question words removed), in query order.

Both lists are non-empty for any query with at least one content word; a query made only of stop words falls back
to the query itself.
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will just don should now is are
    was were be been being have has had having do does did doing i me my we our you your he him his she her it its
    they them their what which who whom whose this that these those am would could shall may might must also as
    tell give name list find""".split()
)
_QUOTED = re.compile(r"[\"“”'‘’]([^\"“”'‘’]{2,80})[\"“”'‘’]")
# A capitalised run may contain lower-case connectors ("Journal of Psychotherapy Integration").
_CAPITALISED_RUN = re.compile(
    r"\b[A-Z0-9][\w'’\-.]*(?:\s+(?:(?:of|the|de|la|and|for|in|von|van|del|du)\s+)*[A-Z0-9][\w'’\-.]*)*"
)
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS and len(w) > 1]


def entity_spans(query: str) -> list[str]:
    """Entity-like spans of ``query``: quoted phrases, then runs of capitalised words or numbers (query order)."""
    spans = [m.group(1).strip() for m in _QUOTED.finditer(query)]
    for match in _CAPITALISED_RUN.finditer(query):
        span = match.group(0).strip(" .-")
        words = span.split()
        # A sentence-initial question word is not an entity ("Who", "When did").
        while words and words[0].lower() in STOP_WORDS:
            words = words[1:]
        if words:
            spans.append(" ".join(words))
    return _unique(spans)


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def extract_keywords(query: str) -> tuple[list[str], list[str]]:
    """Return ``(high_level, low_level)`` keywords for ``query`` without an LLM (see module docstring)."""
    content = _content_words(query)
    spans = entity_spans(query)
    in_spans = {w.lower() for span in spans for w in _WORD.findall(span)}
    low = _unique(spans + [w for w in content if w.lower() not in in_spans])
    high = _unique(content)
    if not low and not high:
        stripped = query.strip()
        return [stripped], [stripped]
    return high or low, low or high
