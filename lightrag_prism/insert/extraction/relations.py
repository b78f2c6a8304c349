"""(subject, predicate, object) triples from a dependency parse, OpenIE style.

For every clause head (a verb, or a copula "is/was"), the subjects are its ``nsubj``/``nsubjpass`` children and
their conjuncts; a clause without one borrows them: a coordinated or subordinate verb from its head verb ("Hugh
disowned and removed Lambert"), a relative clause or participle from the noun it modifies ("a journal which
publishes ...", "a film directed by ..."; "whose first president was X" gives "first president was"), and a
copula whose subject spaCy hung under a parenthetical clause ("X (died 875) was ...") from that clause. Objects:

* **subject-verb-object**: ``dobj``/``dative``/``oprd`` children -> ``(S, "won", Nobel Prize)``, and a preposition
  the parser hung on such an object -> ``(S, "shared with", Pierre Curie)``;
* **copula**: the attribute itself, and its prepositional objects -> ``(S, "was", American film director)``,
  ``(S, "was queen of", Lotharingia)``;
* **prepositional**: ``prep``/``agent`` children of the verb -> ``(S, "born in", Paris)``,
  ``(S, "published by", APA)``; one level deeper through an unresolved noun -> ``(S, "was by marriage to", X)``;
* **appositive**: ``X, daughter of Y`` -> ``(X, "daughter of", Y)``; ``X, a Y`` -> ``(X, "is", Y)``.

Arguments are resolved to entity mentions by the caller's ``resolve(token)``; a triple is kept only when both sides
resolve to different mentions. The predicate is lower case, at most :data:`MAX_PREDICATE_WORDS` words.
"""

from __future__ import annotations

from typing import Callable, Iterator

from .mentions import Mention

Resolve = Callable[[object], "Mention | None"]
Triple = tuple[Mention, str, Mention]

BE_FORMS = frozenset({"is", "was", "are", "were", "be", "been", "being", "am", "'s", "'re"})
_SUBJECT_DEPS = ("nsubj", "nsubjpass")
_OBJECT_DEPS = ("dobj", "dative", "oprd")
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom"})
_BORROWS_SUBJECT = ("conj", "xcomp", "advcl")
# what a possessive pronoun stands for: a person's, or a thing's
POSSESSIVES = {"its": "thing", "their": "thing", "his": "person", "her": "person"}
MAX_PREDICATE_WORDS = 6


def _with_conjuncts(token) -> list:
    out, stack = [], [token]
    while stack:
        t = stack.pop()
        out.append(t)
        stack.extend(c for c in t.children if c.dep_ == "conj")
    return out


def _is_copula(verb) -> bool:
    return verb.lower_ in BE_FORMS


def _subjects(verb, depth: int = 0) -> list[tuple[object, str]]:
    """(subject token, predicate prefix) pairs of ``verb``'s clause."""
    own = [c for c in verb.children if c.dep_ in _SUBJECT_DEPS]
    if own:
        pairs = []
        for s in own:
            whose = [c for c in s.children if c.dep_ == "poss" and c.lower_ == "whose"]
            if whose and verb.dep_ == "relcl":
                prefix = " ".join(t.lower_ for t in s.subtree if t.i > whose[0].i and t.i <= s.i)
                pairs.append((verb.head, prefix))
            elif s.lower_ in _RELATIVE_PRONOUNS and verb.dep_ == "relcl":
                pairs.append((verb.head, ""))
            else:
                pairs += [(t, "") for t in _with_conjuncts(s)]
                possessor = _possessive_pronoun(s)
                if possessor is not None:  # "Its headquarters are in Y": the possessor, if it resolves
                    pairs.append((possessor, " ".join(t.lower_ for t in s.subtree if possessor.i < t.i <= s.i)))
        return pairs
    if verb.dep_ in ("relcl", "acl"):
        return [(verb.head, "")]
    clausal = [c for c in verb.children if c.dep_ == "csubj"]
    if clausal and depth < 3:  # "X (died 875) was ...": the parenthetical verb took X as its subject
        return _subjects(clausal[0], depth + 1)
    if verb.dep_ in _BORROWS_SUBJECT and depth < 3 and verb.head.pos_ in ("VERB", "AUX"):
        return _subjects(verb.head, depth + 1)
    return []


def _possessive_pronoun(noun):
    """The "its"/"his"/"her"/"their" of a common noun ("its headquarters"), else None."""
    if noun.pos_ != "NOUN":
        return None
    return next((c for c in noun.children if c.dep_ == "poss" and c.lower_ in POSSESSIVES), None)


def _verb_phrase(verb) -> str:
    words = [c for c in verb.children if c.dep_ == "neg"] + [verb] + [c for c in verb.children if c.dep_ == "prt"]
    return " ".join(t.lower_ for t in sorted(words, key=lambda t: t.i))


def _prepositional(head, predicate: str, resolve: Resolve, deeper: bool = True,
                   outside: Mention | None = None) -> Iterator[tuple[str, object]]:
    """(predicate + preposition, object mention) for each prepositional object of ``head`` (only the prepositions
    after ``outside``'s tokens when given: "in Physics" belongs to "Nobel Prize in Physics")."""
    for prep in head.children:
        if prep.dep_ not in ("prep", "agent") or (outside is not None and prep.i < outside.end):
            continue
        for obj in (o for c in prep.children if c.dep_ == "pobj" for o in _with_conjuncts(c)):
            mention = resolve(obj)
            if mention is not None:
                yield f"{predicate} {prep.lower_}", mention
                if deeper:  # "founded by [Steve Jobs] in Cupertino": "in" belongs to the verb
                    yield from _prepositional(obj, predicate, resolve, deeper=False, outside=mention)
            elif deeper and obj.pos_ == "NOUN":
                yield from _prepositional(obj, f"{predicate} {prep.lower_} {obj.lower_}", resolve, deeper=False)


def _objects(verb, resolve: Resolve) -> Iterator[tuple[str, object]]:
    base = _verb_phrase(verb)
    if _is_copula(verb):
        for attr in (a for c in verb.children if c.dep_ in ("attr", "acomp") for a in _with_conjuncts(c)):
            mention = resolve(attr)
            if mention is not None:
                yield base, mention
            possessor = _possessive_pronoun(attr)  # the attribute may resolve to the subject itself ("X is its Y")
            owner = resolve(possessor) if possessor is not None else None
            if owner is not None:  # "X has been its mayor": X mayor of what "its" stands for
                yield f"{base} {attr.lower_} of", owner
            yield from _prepositional(attr, f"{base} {attr.lower_}", resolve, deeper=False)
    for obj in (o for c in verb.children if c.dep_ in _OBJECT_DEPS for o in _with_conjuncts(c)):
        mention = resolve(obj)
        if mention is not None:
            yield base, mention
            # "shared [the Nobel Prize] with Pierre Curie": the parser often hangs the verb's preposition on the object
            yield from _prepositional(obj, base, resolve, deeper=False, outside=mention)
        else:
            yield from _prepositional(obj, f"{base} {obj.lower_}", resolve, deeper=False)
    yield from _prepositional(verb, base, resolve)


def _appositions(sentence, resolve: Resolve) -> Iterator[Triple]:
    for token in sentence:
        if token.dep_ != "appos":
            continue
        head = resolve(token.head)
        if head is None:
            continue
        mention = resolve(token)
        if mention is not None:
            yield head, "is", mention
        if token.pos_ == "NOUN":  # "Hucbert, the lay abbot of St. Maurice's Abbey"
            for predicate, obj in _prepositional(token, token.lower_, resolve, deeper=False):
                yield head, predicate, obj


def _short(predicate: str) -> str:
    return " ".join(predicate.split()[:MAX_PREDICATE_WORDS])


def sentence_triples(sentence, resolve: Resolve) -> list[Triple]:
    """The triples of one spaCy sentence span, in order, without duplicates or self-relations."""
    triples, seen = [], set()

    def add(subject: Mention, predicate: str, obj: Mention) -> None:
        key = (subject.name, predicate, obj.name)
        if subject.name != obj.name and key not in seen:
            seen.add(key)
            triples.append((subject, _short(predicate), obj))

    for verb in sentence:
        if verb.pos_ not in ("VERB", "AUX") or verb.dep_ in ("aux", "auxpass"):
            continue
        subjects = [(s, prefix) for s, prefix in _subjects(verb) if resolve(s) is not None]
        if not subjects:
            continue
        for predicate, obj in _objects(verb, resolve):
            for s, prefix in subjects:
                add(resolve(s), f"{prefix} {predicate}".strip(), obj)
    for subject, predicate, obj in _appositions(sentence, resolve):
        add(subject, predicate, obj)
    return triples
