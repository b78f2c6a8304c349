"""The result type every retriever returns: ranked entities, relations and chunks with scores and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ItemKind = Literal["entity", "relation", "chunk"]


@dataclass(frozen=True)
class ScoredItem:
    """One retrieved item.

    ``id`` is the entity name, the relation's ``(src, tgt)`` joined by ``RELATION_ID_SEP``, or the chunk id.
    ``data`` holds the item's LightRAG fields (what the stock pipeline produces for the same item); ``found_by``
    names the perspectives/steps that produced it (``"multihop"``, ``"ppr"``, ``"fastrp"``, ``"dense"``, ...);
    ``path`` is an optional chain of entity names back to a seed.
    """

    kind: ItemKind
    id: str
    score: float
    found_by: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    path: tuple[str, ...] = ()

    def annotation(self) -> dict[str, Any]:
        note: dict[str, Any] = {"score": float(self.score), "found_by": "+".join(self.found_by)}
        if self.path:
            note["path"] = list(self.path)
        return note


RELATION_ID_SEP = " -> "


def relation_id(src: str, tgt: str) -> str:
    return f"{src}{RELATION_ID_SEP}{tgt}"


@dataclass
class Retrieval:
    """What a mode retrieved, best first, plus metadata (fallbacks taken, counts, timings)."""

    entities: list[ScoredItem] = field(default_factory=list)
    relations: list[ScoredItem] = field(default_factory=list)
    chunks: list[ScoredItem] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def record_fallback(self, step: str, reason: str) -> None:
        self.metadata.setdefault("fallbacks", []).append({"step": step, "reason": reason})
