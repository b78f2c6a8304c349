"""Short names that stand for a longer name of the same chunk: "Minaj" -> "Nicki Minaj", "Edwards" -> "Eddie Edwards".

A text names someone in full once and then by surname (or first name). Left alone, every "Minaj", "Sinatra" or
"Adams" becomes its own entity, joined across documents to every other person of that surname: a false hub. Within
one chunk, a name whose words are the last or first words of exactly one longer name of a compatible type is an
alias of it. Types are compatible when they are equal or one of them is ``other`` (a proper noun the NER did not
type), so "Paris" (location) never becomes "Paris Hilton" (person). Ambiguous short names (two Curies) stay as they
are.
"""

from __future__ import annotations

from .records import Entity

UNTYPED = "other"
ALIAS_TYPES = frozenset({"person", "organization", "location", "event", "content", "artifact", UNTYPED})


def _compatible(a: str, b: str) -> bool:
    return a == b or UNTYPED in (a, b)


def _abbreviates(short: list[str], long: list[str]) -> bool:
    n = len(short)
    return len(long) > n and (long[-n:] == short or long[:n] == short)


def short_name_aliases(entities: list[Entity]) -> dict[str, str]:
    """``{short name: the one longer name it abbreviates}`` among ``entities`` (names of one chunk)."""
    named = [e for e in entities if e.type in ALIAS_TYPES]
    words = {e.name: e.name.split() for e in named}
    aliases = {}
    for short in named:
        longer = {e.name for e in named
                  if _compatible(short.type, e.type) and _abbreviates(words[short.name], words[e.name])}
        if len(longer) == 1:
            aliases[short.name] = longer.pop()
    # "Sr." -> "Smith Sr." -> "John Smith Sr.": follow chains to the longest name
    for short, target in list(aliases.items()):
        seen = {short}
        while target in aliases and target not in seen:
            seen.add(target)
            target = aliases[target]
        aliases[short] = target
    return aliases
