"""Entity mentions in one parsed line: named entities, salient noun phrases and foreign-script names.

* **Named entities** keep spaCy's span, minus leading determiners and stop words ("the American Psychological
  Association" -> "American Psychological Association"); spaCy's label maps to one of LightRAG's default entity
  types (:data:`LABEL_TYPES`). The small model often labels a place or a work PERSON ("Kestrel Bay", "the film
  Glass Harbour"): a name whose last word says what it is ("Bay", "Lighthouse", "University") or that follows a
  category noun ("the film", "the river") takes that word's type instead (:data:`HEAD_TYPES`). Bare numbers
  (CARDINAL, ORDINAL, QUANTITY, PERCENT, MONEY) are not entities, and a DATE or TIME must contain a digit
  ("1963", "11 November 875", not "today").
* **Salient noun phrases** are spaCy noun chunks, stripped the same way, that hold a proper noun (a name the NER
  missed: "Teutberga") or are at least two words with a noun head ("medieval bishop", "peer-reviewed journal").
  A noun phrase that only wraps a nationality or date ("an American film director") replaces that entity; one that
  contains a name ("Lambert's half-brother") yields to it. A phrase without a proper noun is ``generic``: the
  extractor keeps it only when its chunk names it twice or it stands for a name (``spacy_extractor``).
* **Foreign-script names** come from :func:`scripts.foreign_name_spans` where no entity covers them.

Pronouns, determiners and stop words are never entities, whatever spaCy says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .identifiers import identifier_spans
from .scripts import foreign_name_spans, has_foreign_letters

#: spaCy label -> LightRAG entity type (LightRAG's default types, lower case as its parser stores them).
LABEL_TYPES = {
    "PERSON": "person", "ORG": "organization", "GPE": "location", "LOC": "location", "FAC": "location",
    "EVENT": "event", "WORK_OF_ART": "content", "LAW": "content", "PRODUCT": "artifact", "LANGUAGE": "concept",
    "NORP": "concept", "DATE": "data", "TIME": "data",
}
#: Labels of names: such entities may be linked by sentence co-occurrence; the others only by a parsed relation.
NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "EVENT", "WORK_OF_ART", "LAW", "PRODUCT", "LANGUAGE"})
#: A word that says what kind of thing a name names, as the name's last word ("Kestrel Bay") or the category noun
#: before it ("the film Glass Harbour"). Used only against a PERSON label or an unlabelled proper noun phrase:
#: spaCy's small model calls many unfamiliar places and works persons, rarely the reverse.
HEAD_TYPES = {
    **dict.fromkeys((
        "bay", "river", "lake", "sea", "ocean", "island", "islands", "mountain", "mountains", "mount", "hill",
        "hills", "valley", "desert", "forest", "park", "street", "road", "avenue", "square", "bridge", "lighthouse",
        "castle", "palace", "tower", "cathedral", "church", "abbey", "monastery", "temple", "mosque", "harbour",
        "harbor", "port", "airport", "station", "county", "province", "district", "city", "town", "village",
        "coast", "peninsula", "canal", "falls", "glacier", "creek", "beach", "gulf", "strait", "cape", "stadium",
        "arena", "museum", "hospital", "prison", "fort", "region", "state", "country", "kingdom", "empire"),
        "location"),
    **dict.fromkeys((
        "university", "college", "school", "academy", "company", "corporation", "corp", "inc", "ltd", "llc", "bank",
        "association", "society", "council", "party", "committee", "institute", "club", "band", "orchestra",
        "league", "agency", "ministry", "foundation", "group", "records", "studios", "team", "firm", "label"),
        "organization"),
    **dict.fromkeys((
        "film", "movie", "novel", "book", "album", "song", "single", "play", "opera", "series", "show", "poem",
        "painting", "magazine", "newspaper", "journal", "documentary", "sitcom", "musical", "episode"), "content"),
    **dict.fromkeys(("ship", "aircraft", "car", "locomotive", "game", "software"), "artifact"),
}
_STRIP_POS = frozenset({"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART", "SCONJ", "SPACE", "SYM"})
_BAD_NAME_CHARS = re.compile(r"[\[\]{}<>|\\]")
_LETTER = re.compile(r"[^\W\d_]")
MAX_NAME_TOKENS = 10
IDENTIFIER_TYPE = "artifact"  # a code identifier's entity type (LightRAG's own types have no closer one)
#: A title or role before a name the NER calls a person is not part of the name ("Mayor Agnes Pell" is Agnes Pell).
#: Honorifics say it names a person whatever the NER's label ("Dr Anton Reyes-Loh"); the other titles only when it
#: says person ("General Motors" keeps its name).
HONORIFICS = frozenset(("mr", "mrs", "ms", "miss", "mx", "dr", "professor", "prof", "sir", "dame", "mayor"))
PERSON_TITLES = HONORIFICS | frozenset((
    "doctor", "lord", "lady", "president", "senator", "judge", "justice", "captain", "capt", "colonel", "general",
    "sergeant", "officer",
    "reverend", "rev", "father", "chancellor", "minister", "governor", "councillor", "councilor", "inspector",
    "detective", "nurse", "coach", "chef", "engineer", "director", "chairman", "chairwoman", "chair", "ceo"))


@dataclass(eq=False)
class Mention:
    start: int  # first token (index in the Doc)
    end: int  # one past the last token
    name: str
    type: str
    named: bool  # a name: may be linked to other names of its sentence without a parsed relation
    generic: bool = False  # a noun phrase without a proper noun ("pastry chef")


def span_name(tokens) -> str:
    return " ".join("".join(t.text_with_ws for t in tokens).split())


def _strip(tokens: list) -> list:
    """Drop leading determiners/pronouns/stop words/punctuation and trailing punctuation or possessive marks."""
    while tokens and (tokens[0].pos_ in _STRIP_POS or tokens[0].is_stop or tokens[0].is_space):
        tokens = tokens[1:]
    while tokens and (tokens[-1].pos_ in ("PUNCT", "PART", "SPACE") or tokens[-1].dep_ == "case"):
        tokens = tokens[:-1]
    return tokens


def valid_name(name: str, tokens: list) -> bool:
    if not name or not _LETTER.search(name) or _BAD_NAME_CHARS.search(name) or len(tokens) > MAX_NAME_TOKENS:
        return False
    # A token holding another script is left to the script-aware spans: the English tokenizer may keep a whole
    # Japanese clause (東京は日本の首都です) as one "proper noun".
    if has_foreign_letters(name):
        return False
    return not all(t.is_stop or t.pos_ in ("PRON", "DET") for t in tokens)


def _compound_extent(tokens: list) -> list:
    """``tokens`` grown along proper-noun compounds the NER cut: "Zoë" (compound of "Ørsted") -> "Zoë Ørsted"."""
    doc = tokens[0].doc
    start, end = tokens[0].i, tokens[-1].i + 1
    while end < len(doc) and doc[end - 1].dep_ == "compound" and doc[end - 1].head.i == end \
            and doc[end].pos_ == "PROPN" and not doc[end].ent_type_:
        end += 1
    while start > 0 and doc[start - 1].pos_ == "PROPN" and doc[start - 1].dep_ == "compound" \
            and start <= doc[start - 1].head.i < end and not doc[start - 1].ent_type_:
        start -= 1
    return list(doc[start:end])


def type_by_words(tokens: list) -> str | None:
    """The type the category noun before a name ("the film Glass Harbour") or the name's own last word ("Kestrel
    Bay") gives (:data:`HEAD_TYPES`), if any; the category noun first: it says what the whole name is."""
    first, last = tokens[0], tokens[-1]
    before = first.doc[first.i - 1] if first.i > 0 else None
    if before is not None and before.pos_ == "NOUN" and before.lower_ in HEAD_TYPES and (
            before.dep_ == "compound" or last.head.i == before.i or before.head.i == last.i):
        return HEAD_TYPES[before.lower_]
    return HEAD_TYPES.get(last.lower_.rstrip(".")) if len(tokens) > 1 else None


def _without_title(tokens: list, label: str) -> tuple[list, bool]:
    """``tokens`` without a leading title ("Professor", "Dr.") when a capitalised name follows, and whether there was
    one (:data:`PERSON_TITLES`)."""
    titles = PERSON_TITLES if label == "PERSON" else HONORIFICS
    if len(tokens) > 1 and tokens[0].lower_.rstrip(".") in titles and tokens[1].text[:1].isupper():
        return tokens[1:], True
    return tokens, False


def _entity_mentions(doc) -> list[Mention]:
    mentions = []
    for ent in doc.ents:
        entity_type = LABEL_TYPES.get(ent.label_)
        tokens = _strip(list(ent))
        if entity_type is None or not tokens:
            continue
        if ent.label_ in NAME_LABELS:
            tokens = _compound_extent(tokens)
        tokens, titled = _without_title(tokens, ent.label_)
        if titled:
            entity_type = "person"
        if ent.label_ == "PERSON" and not titled:
            entity_type = type_by_words(tokens) or entity_type
        name = span_name(tokens)
        if entity_type == "data" and not any(ch.isdigit() for ch in name):
            continue
        if valid_name(name, tokens):
            mentions.append(Mention(tokens[0].i, tokens[-1].i + 1, name, entity_type, ent.label_ in NAME_LABELS))
    return mentions


def _phrase_mention(chunk) -> Mention | None:
    if chunk.root.pos_ == "PRON":
        return None
    tokens = _strip(list(chunk))
    if not tokens:
        return None
    proper = any(t.pos_ == "PROPN" for t in tokens)
    if not proper and (len(tokens) < 2 or chunk.root.pos_ != "NOUN"):
        return None
    tokens, titled = _without_title(tokens, "") if proper else (tokens, False)
    name = span_name(tokens)
    if not valid_name(name, tokens):
        return None
    kind = "person" if titled else (type_by_words(tokens) or "other") if proper else "concept"
    return Mention(tokens[0].i, tokens[-1].i + 1, name, kind, proper, generic=not proper)


def _all_proper(tokens) -> bool:
    return all(t.pos_ == "PROPN" or t.dep_ == "case" for t in tokens)


def _overlapping(mention: Mention, others: list[Mention]) -> list[Mention]:
    return [o for o in others if o.start < mention.end and mention.start < o.end]


def find_mentions(doc) -> list[Mention]:
    """Non-overlapping mentions of ``doc`` in token order."""
    mentions = _entity_mentions(doc)
    for chunk in doc.noun_chunks:
        phrase = _phrase_mention(chunk)
        if phrase is None:
            continue
        inside = _overlapping(phrase, mentions)
        if len(inside) > 1 and _all_proper(doc[phrase.start:phrase.end]):
            # one name the NER cut in pieces at a possessive: "St. Maurice's" + "Abbey"
            head = next((o for o in inside if o.start <= chunk.root.i < o.end), inside[-1])
            phrase.type, phrase.named = head.type, True
            mentions = [m for m in mentions if m not in inside] + [phrase]
            continue
        root_outside = all(not (o.start <= chunk.root.i < o.end) for o in inside)
        if inside and (not root_outside or any(o.named for o in inside)):
            continue  # a name inside the phrase wins
        mentions = [m for m in mentions if m not in inside] + [phrase]
    # Foreign names are checked against the others by characters: spaCy's English tokenizer may keep a whole
    # Japanese clause (東京は日本の首都) as one token, and each name in it still counts.
    covered = [(doc[m.start].idx, doc[m.end - 1].idx + len(doc[m.end - 1])) for m in mentions]
    for start, end in foreign_name_spans(doc.text):
        span = doc.char_span(start, end, alignment_mode="expand")
        if span is not None and not any(a < end and start < b for a, b in covered):
            mentions.append(Mention(span.start, span.end, doc.text[start:end], "other", True))
    return _shared_surnames(doc, sorted(_with_identifiers(doc, mentions), key=lambda m: m.start))


def _with_identifiers(doc, mentions: list[Mention]) -> list[Mention]:
    """Code identifiers (``identifiers.py``) as named mentions under their canonical name; a name the NER found
    wins over one, an identifier over the common noun phrase around it ("the work_mem setting")."""
    for start, end, name in identifier_spans(doc.text):
        span = doc.char_span(start, end, alignment_mode="expand")
        if span is None:
            continue
        identifier = Mention(span.start, span.end, name, IDENTIFIER_TYPE, True)
        inside = _overlapping(identifier, mentions)
        if not any(o.named for o in inside):
            mentions = [o for o in mentions if o not in inside] + [identifier]
    return mentions


def _shared_surnames(doc, mentions: list[Mention]) -> list[Mention]:
    """A lone given name coordinated with a full name shares its surname: "the brothers Piet and Oskar Hale" names
    Piet Hale and Oskar Hale."""
    for first, second in zip(mentions, mentions[1:]):
        if (first.type == "person" and second.type == "person" and first.end - first.start == 1
                and second.end - second.start >= 2 and second.start == first.end + 1
                and doc[first.end].lower_ in ("and", "&")):
            first.name = f"{first.name} {doc[second.end - 1].text}"
    return mentions
