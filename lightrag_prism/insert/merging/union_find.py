"""Union-find and turning accepted merge decisions into entity clusters (pure).

PrismRAG merged pairs one at a time ("b into a" by index), so chains A~B, B~C
produced order-dependent results.  Here every accepted pair is a union; each
connected component becomes one :class:`Cluster` with one deterministic
canonical name.  Note that a chain merges A and C even if A~C was never judged:
callers that want stricter clusters should filter pairs before calling.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class UnionFind(Generic[T]):
    """Disjoint sets over hashable items, with path compression and union by size."""

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._parent: dict[T, T] = {}
        self._size: dict[T, int] = {}
        for item in items:
            self.add(item)

    def __contains__(self, item: object) -> bool:
        return item in self._parent

    def __len__(self) -> int:
        return len(self._parent)

    def add(self, item: T) -> None:
        """Add ``item`` as a singleton set (no-op if present)."""
        if item not in self._parent:
            self._parent[item] = item
            self._size[item] = 1

    def find(self, item: T) -> T:
        """Root of ``item``'s set (``item`` is added if unknown); compresses the path."""
        self.add(item)
        root = item
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[item] != root:  # iterative: no recursion limit on long chains
            self._parent[item], item = root, self._parent[item]
        return root

    def union(self, a: T, b: T) -> T:
        """Join the sets of ``a`` and ``b``; returns the new root (the larger set's root)."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size.pop(rb)
        return ra

    def connected(self, a: T, b: T) -> bool:
        return self.find(a) == self.find(b)

    def groups(self) -> list[list[T]]:
        """All sets, each in insertion order, ordered by their first-inserted member."""
        by_root: dict[T, list[T]] = {}
        for item in self._parent:
            by_root.setdefault(self.find(item), []).append(item)
        return list(by_root.values())


@dataclass(frozen=True)
class MergePair:
    """An accepted decision that ``a`` and ``b`` are the same entity."""

    a: str
    b: str
    confidence: float = 1.0
    canonical: str | None = None  # the name the judge proposed for the merged entity


@dataclass(frozen=True)
class Cluster:
    """Entities to merge into ``canonical`` (which is one of ``members``)."""

    cluster_id: str
    members: tuple[str, ...]  # sorted
    canonical: str
    min_confidence: float
    pairs: tuple[tuple[str, str], ...]  # sorted pair keys that formed the cluster

    @property
    def sources(self) -> tuple[str, ...]:
        """Members merged away into ``canonical``."""
        return tuple(m for m in self.members if m != self.canonical)


def pair_key(a: str, b: str) -> tuple[str, str]:
    """Order-independent key of a pair of entity names."""
    return (a, b) if a <= b else (b, a)


def cluster_id_for(members: Iterable[str]) -> str:
    """Stable id of a member set: sha256 of the sorted JSON list (first 16 hex digits)."""
    payload = json.dumps(sorted(members), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _as_pair(item: MergePair | tuple) -> MergePair:
    return item if isinstance(item, MergePair) else MergePair(*item)


def _choose_canonical(
    members: list[str], pairs: list[MergePair], source_counts: Mapping[str, int]
) -> str:
    """Most-voted proposed name that is a member; else most source chunks; ties alphabetical."""
    member_set = set(members)
    votes: Counter[str] = Counter()
    weight: Counter[str] = Counter()
    for p in pairs:
        if p.canonical in member_set:
            votes[p.canonical] += 1
            weight[p.canonical] += p.confidence
    if votes:
        return min(votes, key=lambda n: (-votes[n], -weight[n], -source_counts.get(n, 0), n))
    return min(members, key=lambda n: (-source_counts.get(n, 0), n))


def merge_clusters(
    pairs: Iterable[MergePair | tuple],
    canonical_names: Mapping[tuple[str, str], str] | None = None,
    *,
    source_counts: Mapping[str, int] | None = None,
    min_confidence: float = 0.0,
) -> list[Cluster]:
    """Group accepted pairs into clusters (chains merge into one).

    Args:
        pairs: ``MergePair`` objects or tuples ``(a, b[, confidence[, canonical]])``.
        canonical_names: optional proposed canonical name per :func:`pair_key`;
            overrides the pair's own ``canonical``.
        source_counts: number of source chunks per entity, for the fallback choice.
        min_confidence: pairs below this confidence are ignored.

    The canonical name of a cluster is the proposed name with most votes among
    its pairs that is also a member (ties: higher summed confidence, more source
    chunks, alphabetical); without such a vote, the member with most source chunks
    (ties: alphabetical).  Self-pairs are ignored.  Clusters come sorted by canonical.
    """
    overrides = canonical_names or {}
    counts = source_counts or {}
    uf: UnionFind[str] = UnionFind()
    accepted: list[MergePair] = []
    for raw in pairs:
        p = _as_pair(raw)
        if p.a == p.b or p.confidence < min_confidence:
            continue
        key = pair_key(p.a, p.b)
        accepted.append(MergePair(key[0], key[1], p.confidence, overrides.get(key, p.canonical)))
        uf.union(key[0], key[1])
    by_root: dict[str, list[MergePair]] = {}
    for p in accepted:
        by_root.setdefault(uf.find(p.a), []).append(p)
    clusters = [_build_cluster(ps, counts) for ps in by_root.values()]
    return sorted(clusters, key=lambda c: (c.canonical, c.members))


def _build_cluster(pairs: list[MergePair], counts: Mapping[str, int]) -> Cluster:
    members = sorted({n for p in pairs for n in (p.a, p.b)})
    return Cluster(
        cluster_id=cluster_id_for(members),
        members=tuple(members),
        canonical=_choose_canonical(members, pairs, counts),
        min_confidence=min(p.confidence for p in pairs),
        pairs=tuple(sorted({(p.a, p.b) for p in pairs})),
    )
