"""What an offline extractor returns for one chunk, and its rendering as LightRAG extraction rows.

The rows use LightRAG's own record format (``entity<|#|>name<|#|>type<|#|>description`` and
``relation<|#|>source<|#|>target<|#|>keywords<|#|>description``, then ``<|COMPLETE|>``), so LightRAG parses,
normalises, caches and merges them exactly as it does an LLM's answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...snapshot import COOCCURRENCE_KEYWORD, COOCCURRENCE_WEIGHT  # noqa: F401  (re-exported: the extractors)

TUPLE_DELIMITER = "<|#|>"
COMPLETE = "<|COMPLETE|>"
# LightRAG embeds every entity and relation, and embedding time grows with text length, so description length is
# insert time (entity and relation texts are most of the embedder's characters). An entity's description is its
# sentence when that fits in 160 characters (three sentences in four of the bundled corpora's), else the whole
# clauses around the mention that fit; a relation's (the fact's evidence) the same around both arguments, cut past
# 200 characters only when the arguments themselves lie further apart (``spacy_extractor.mention_window``).
MAX_ENTITY_DESCRIPTION_CHARS = 160
RELATION_WINDOW_CHARS = 160
MAX_RELATION_DESCRIPTION_CHARS = 200

_READABLE = re.compile(r"[^\W_]", re.UNICODE)
_UNSAFE = re.compile(r"<\|[^|]*\|>|[\r\n\t]+|\s{2,}")


def clean_field(text: str, limit: int | None = None) -> str:
    """One line of text that cannot break a row: no delimiters, newlines or runs of spaces."""
    text = _UNSAFE.sub(" ", str(text)).strip()
    if limit and len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        text = text[:cut if cut > limit // 2 else limit].rstrip() + " ..."
    return text


def _described(description: str, limit: int, name: str) -> str:
    """The cleaned description, or the name when nothing readable is left (LightRAG drops a record whose
    description is empty once its quotes and punctuation are stripped)."""
    text = clean_field(description, limit)
    return text if _READABLE.search(text) else clean_field(name)


@dataclass(frozen=True)
class Entity:
    name: str
    type: str  # one of LightRAG's default entity types, lower case
    description: str


@dataclass(frozen=True)
class Relation:
    source: str  # subject
    target: str  # object
    predicate: str  # goes into LightRAG's ``keywords``
    description: str  # the sentence it was read from


@dataclass
class ChunkExtraction:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)

    def rows(self) -> str:
        """The extraction in LightRAG's row format (entities, relations, completion marker)."""
        d = TUPLE_DELIMITER
        lines = [f"entity{d}{clean_field(e.name)}{d}{e.type}{d}"
                 f"{_described(e.description, MAX_ENTITY_DESCRIPTION_CHARS, e.name)}" for e in self.entities]
        lines += [f"relation{d}{clean_field(r.source)}{d}{clean_field(r.target)}{d}{clean_field(r.predicate)}{d}"
                  f"{_described(r.description, MAX_RELATION_DESCRIPTION_CHARS, r.source)}" for r in self.relations]
        return "\n".join(lines + [COMPLETE])
