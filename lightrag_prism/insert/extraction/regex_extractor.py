"""The fallback extractor when spaCy or its English model is missing: capitalised phrases and sentence co-occurrence.

Entities are runs of capitalised words (Unicode upper case, so "Zoë Ørsted" stays whole, initials kept:
"Thomas C. Südhof") plus foreign-script names (:mod:`.scripts`), minus leading stop words ("In Paris" -> "Paris")
and names that are only stop words or pronouns ("The", "He"). Entities of one sentence are linked as co-occurring
(a chain, weight lowered by the insert hook). No entity types: every entity is ``other``.
"""

from __future__ import annotations

import regex

from ...keywords import STOP_WORDS
from .records import COOCCURRENCE_KEYWORD, ChunkExtraction, Entity, Relation
from .scripts import foreign_name_spans

# A sentence ends at . ! ? before a space, except after an initial or a common abbreviation ("Thomas C. Südhof").
_SENTENCE = regex.compile(r"(?:[^.!?\n]|(?<=\b(?:\p{Lu}|St|Mr|Mrs|Ms|Dr|Jr|Sr|Inc|Co|Ltd|Mt|Ft|vs))\.|"
                          r"[.!?](?!\s|$))+(?:[.!?](?=\s|$))?")
_CONNECTOR = r"(?:of|the|de|du|la|le|van|von|der|den|for|da|di)"
_CAPITALISED_RUN = regex.compile(
    rf"\b\p{{Lu}}[\p{{L}}\p{{M}}'’\-]*\.?(?:\s+(?:{_CONNECTOR}\s+)*\p{{Lu}}[\p{{L}}\p{{M}}'’\-]*\.?)*")
MAX_ENTITIES = 40


def _names(sentence: str) -> list[str]:
    names = []
    for match in _CAPITALISED_RUN.finditer(sentence):
        words = match.group().rstrip(".").split()
        while words and words[0].lower().rstrip(".") in STOP_WORDS:
            words = words[1:]
        if words and not all(w.lower().rstrip(".") in STOP_WORDS for w in words):
            names.append(" ".join(words))
    names += [sentence[a:b] for a, b in foreign_name_spans(sentence)]
    return [n for n in dict.fromkeys(names) if len(n) > 1]


class RegexExtractor:
    name = "regex"

    def extract(self, texts: list[str]) -> list[ChunkExtraction]:
        return [self._chunk(str(text)) for text in texts]

    @staticmethod
    def _chunk(text: str) -> ChunkExtraction:
        entities: dict[str, Entity] = {}
        relations: dict[frozenset, Relation] = {}
        for sentence in (s.strip() for s in _SENTENCE.findall(text)):
            names = [n for n in _names(sentence) if n in entities or len(entities) < MAX_ENTITIES]
            for name in names:
                entities.setdefault(name, Entity(name, "other", sentence))
            for a, b in zip(names, names[1:]):
                relations.setdefault(frozenset((a, b)), Relation(a, b, COOCCURRENCE_KEYWORD, sentence))
        return ChunkExtraction(list(entities.values()), list(relations.values()))
