"""Persisted decision log and write-ahead merge journal for agentic entity merging.

One JSON document (the ``merge_log`` record of the plugin state, see ``plugin_state.py``) holds:

* **decisions**: one record per entity pair (key = the two names sorted) with the
  decision (``"merge"`` or ``"refuse"``), confidence, proposed canonical name, a hash
  of each entity's description at decision time and when it was made.  A refused
  pair is not asked again unless one of the descriptions changed
  (:meth:`MergeLog.was_refused`), which is PrismRAG's cache done per entity.
* **journal**: write-ahead entries for cluster merges.  Call :meth:`MergeLog.begin`
  *before* touching the graph and :meth:`MergeLog.complete` after the last write;
  after a crash, :meth:`MergeLog.pending` lists the merges to roll forward (redo
  them: merging already-merged entities into the same canonical is a no-op for
  the caller to detect).

Every change is saved at once as one record (one atomic write: a file replace,
one SQL transaction or one Redis SET), so a crash leaves either the old or the
new log, never a torn one.  One merging writer at a time: merges run by several
processes at once would overwrite each other's log entries.  A log that is not
valid raises ``ValueError`` instead of being discarded, because discarding it
would silently lose pending merges.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .union_find import Cluster, pair_key

logger = logging.getLogger(__name__)

LOG_DOCUMENT = "merge_log"
DECISIONS = ("merge", "refuse")
_VERSION = 1


def description_hash(description: str) -> str:
    """SHA-256 hex digest of a description (what :meth:`MergeLog.record` expects)."""
    return hashlib.sha256((description or "").encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Decision:
    """The judged outcome for one pair; ``desc_hashes`` maps each name to its description hash."""

    a: str
    b: str
    decision: str
    confidence: float
    canonical: str | None
    desc_hashes: dict[str, str]
    decided_at: float


@dataclass(frozen=True)
class JournalEntry:
    """A cluster merge announced with :meth:`MergeLog.begin`."""

    cluster_id: str
    members: list[str]
    canonical: str
    state: str  # "pending" or "done"
    started_at: float
    completed_at: float | None = None


def _cluster_fields(cluster: Cluster | Mapping[str, Any]) -> tuple[str, list[str], str]:
    if isinstance(cluster, Cluster):
        return cluster.cluster_id, list(cluster.members), cluster.canonical
    try:
        return str(cluster["cluster_id"]), [str(m) for m in cluster["members"]], str(cluster["canonical"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"cluster needs cluster_id, members and canonical: {exc}") from None


class MergeLog:
    """Decision log + merge journal kept in one document (``plugin_state.KVDocument`` or ``FileDocument``);
    open it with ``await MergeLog.open(document)``."""

    def __init__(self, document, clock: Callable[[], float] = time.time) -> None:
        self.document = document
        self._clock = clock
        self._lock = asyncio.Lock()
        self._decisions: dict[tuple[str, str], Decision] = {}
        self._journal: dict[str, JournalEntry] = {}

    @classmethod
    async def open(cls, document, clock: Callable[[], float] = time.time) -> "MergeLog":
        log = cls(document, clock)
        log._parse(await document.load(None))
        return log

    # ----------------------------------------------------------------- persistence

    def _parse(self, data: Any) -> None:
        if data is None:
            return
        try:
            if data.get("version") != _VERSION:
                raise ValueError(f"unsupported version {data.get('version')!r}")
            for rec in data.get("decisions", []):
                decision = Decision(**rec)
                self._decisions[pair_key(decision.a, decision.b)] = decision
            for rec in data.get("journal", []):
                self._journal[rec["cluster_id"]] = JournalEntry(**rec)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f"merge log {self.document} is unreadable ({exc}); fix or remove it") from exc

    async def _save(self) -> None:
        await self.document.save({
            "version": _VERSION,
            "decisions": [asdict(d) for d in self._decisions.values()],
            "journal": [asdict(e) for e in self._journal.values()],
        })

    # ----------------------------------------------------------------- decisions

    async def record(
        self,
        a: str,
        b: str,
        decision: str,
        confidence: float,
        canonical: str | None = None,
        desc_hash_a: str = "",
        desc_hash_b: str = "",
        *,
        save: bool = True,
    ) -> Decision:
        """Store (or replace) the decision for the pair ``{a, b}`` and persist it (``save=False``: in memory until
        :meth:`save` or the next journal write, for many decisions in a row)."""
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {list(DECISIONS)}, got {decision!r}")
        if a == b:
            raise ValueError(f"a pair needs two different names, got {a!r} twice")
        first, second = pair_key(a, b)
        hashes = {a: desc_hash_a, b: desc_hash_b}
        rec = Decision(first, second, decision, float(confidence), canonical, hashes, self._clock())
        async with self._lock:
            self._decisions[(first, second)] = rec
            if save:
                await self._save()
        return rec

    async def save(self) -> None:
        async with self._lock:
            await self._save()

    def get(self, a: str, b: str) -> Decision | None:
        """The stored decision for ``{a, b}`` (either order), or None."""
        return self._decisions.get(pair_key(a, b))

    def was_refused(self, a: str, b: str, desc_hash_a: str, desc_hash_b: str) -> bool:
        """True if ``{a, b}`` was refused and neither description changed since."""
        rec = self.get(a, b)
        if rec is None or rec.decision != "refuse":
            return False
        return rec.desc_hashes.get(a) == desc_hash_a and rec.desc_hashes.get(b) == desc_hash_b

    def decisions(self) -> list[Decision]:
        return list(self._decisions.values())

    # ----------------------------------------------------------------- journal

    async def begin(self, cluster: Cluster | Mapping[str, Any]) -> JournalEntry:
        """Persist a pending merge *before* the graph is touched; idempotent while pending."""
        cluster_id, members, canonical = _cluster_fields(cluster)
        async with self._lock:
            current = self._journal.get(cluster_id)
            if current is not None and current.state == "pending":
                return current
            entry = JournalEntry(cluster_id, members, canonical, "pending", self._clock())
            self._journal.pop(cluster_id, None)  # a re-begun id moves to the end of the order
            self._journal[cluster_id] = entry
            await self._save()
        return entry

    async def complete(self, cluster_id: str) -> JournalEntry:
        """Mark a merge finished (after its last graph write); no-op if already done."""
        async with self._lock:
            entry = self._journal.get(cluster_id)
            if entry is None:
                raise KeyError(f"no journal entry for cluster {cluster_id!r}; call begin() first")
            if entry.state == "done":
                return entry
            done = JournalEntry(**{**asdict(entry), "state": "done", "completed_at": self._clock()})
            self._journal[cluster_id] = done
            await self._save()
        return done

    def pending(self) -> list[JournalEntry]:
        """Merges begun but never completed (e.g. interrupted by a crash), in begin order."""
        return [e for e in self._journal.values() if e.state == "pending"]

    def journal(self) -> list[JournalEntry]:
        """All journal entries, pending and done, in begin order."""
        return list(self._journal.values())
