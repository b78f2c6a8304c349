"""What changed in the graph since a snapshot was read, as noted by the graph storage's public write methods.

:func:`watch_writes` wraps the write methods of ``BaseGraphStorage`` on one storage instance (every backend has
them: NetworkX, PostgreSQL, Neo4j, ...). After each call, whether it succeeded or not, the names it wrote are noted
in a :class:`GraphChanges` log with a position. A snapshot records the position its read started at; the next one
can then read back only the nodes and edges noted since (``snapshot.patch_snapshot``) instead of the whole graph.

Reading an item again is harmless, missing one is not. So a write is noted after it returns (a read that started
earlier reads it again next time), a removed node names its edges (``snapshot.py`` reads them again), an edge
names its endpoints (some backends create them), and anything the log cannot name asks for a whole read
(:meth:`GraphChanges.need_whole`): ``drop``, a call whose arguments do not parse, a change made by another process
or through another storage object (``PrismRAG.graph_changed``).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Callable, Iterable

logger = logging.getLogger(__name__)

Edge = tuple[str, str]  # endpoints in name order: the graph is undirected
LOG_LIMIT = 500_000  # names kept at most (an instance that writes and never builds a snapshot); past it: whole read


def edge_key(source, target) -> Edge:
    a, b = str(source), str(target)
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class Written:
    """Names one write touched: nodes written, edges written, nodes removed."""

    nodes: tuple = ()
    edges: tuple = ()
    removed: tuple = ()


# Per write method of BaseGraphStorage, what a call names (parameters as LightRAG declares them).
def _upsert_node(node_id, node_data=None) -> Written:
    return Written(nodes=(node_id,))


def _upsert_nodes_batch(nodes) -> Written:
    return Written(nodes=tuple(node_id for node_id, _ in nodes))


def _upsert_edge(source_node_id, target_node_id, edge_data=None) -> Written:
    return Written(nodes=(source_node_id, target_node_id), edges=((source_node_id, target_node_id),))


def _upsert_edges_batch(edges) -> Written:
    return Written(nodes=tuple(n for s, t, _ in edges for n in (s, t)), edges=tuple((s, t) for s, t, _ in edges))


def _delete_node(node_id) -> Written:
    return Written(removed=(node_id,))


def _remove_nodes(nodes) -> Written:
    return Written(removed=tuple(nodes))


def _remove_edges(edges) -> Written:
    return Written(edges=tuple((s, t) for s, t in edges))


WRITE_METHODS: dict[str, Callable[..., Written]] = {
    "upsert_node": _upsert_node, "upsert_nodes_batch": _upsert_nodes_batch,
    "upsert_edge": _upsert_edge, "upsert_edges_batch": _upsert_edges_batch,
    "delete_node": _delete_node, "remove_nodes": _remove_nodes, "remove_edges": _remove_edges,
}
WHOLE_METHODS = ("drop",)


@dataclass(frozen=True)
class Changes:
    """The names noted after some position: nodes (written or removed), edges, and the removed nodes alone."""

    nodes: frozenset
    edges: frozenset
    removed: frozenset

    def __len__(self) -> int:
        return len(self.nodes) + len(self.edges)


class _PositionLog:
    """What both logs share: ``position`` grows with every write noted; ``whole_at`` is the position of the last
    change the log cannot name. Single event loop: no locking needed."""

    def __init__(self) -> None:
        self.position = 0
        self.whole_at = 0

    def need_whole(self) -> None:
        self.position += 1
        self.whole_at = self.position

    def _bound(self) -> None:
        """Past ``LOG_LIMIT`` entries (a writer that never reads), forget everything: the next read is whole."""
        if len(self) > LOG_LIMIT:
            self.need_whole()
            self.forget_through(self.position)


class GraphChanges(_PositionLog):
    """The log: each name with the position of its last write."""

    def __init__(self) -> None:
        super().__init__()
        self._nodes: dict[str, int] = {}
        self._edges: dict[Edge, int] = {}
        self._removed: dict[str, int] = {}

    def note(self, written: Written) -> None:
        self.position += 1
        at = self.position
        for name in written.nodes:
            self._nodes[str(name)] = at
        for name in written.removed:
            self._nodes[str(name)] = self._removed[str(name)] = at
        for source, target in written.edges:
            self._edges[edge_key(source, target)] = at
        self._bound()

    def since(self, position: int) -> Changes | None:
        """What was noted after ``position``; None when a change it cannot name came after it."""
        if self.whole_at > position:
            return None
        return Changes(frozenset(n for n, at in self._nodes.items() if at > position),
                       frozenset(e for e, at in self._edges.items() if at > position),
                       frozenset(n for n, at in self._removed.items() if at > position))

    def forget_through(self, position: int) -> None:
        """Drop what no snapshot still needs: names whose last write is at or before ``position``."""
        for log in (self._nodes, self._edges, self._removed):
            for key in [key for key, at in log.items() if at <= position]:
                del log[key]

    def __len__(self) -> int:
        return len(self._nodes) + len(self._edges)


def _noting(original, written: Callable | None, changes: "GraphChanges | KeyChanges"):
    """``original`` with ``changes.note(written(*args))`` after each call (``need_whole`` when ``written`` is None or
    cannot parse the call)."""
    @functools.wraps(original)
    async def write(*args, **kwargs):
        try:
            return await original(*args, **kwargs)
        finally:  # noted even when it failed midway: reading an unchanged item again costs nothing
            try:
                changes.note(written(*args, **kwargs)) if written is not None else changes.need_whole()
            except Exception as exc:  # noqa: BLE001 - arguments this log cannot parse: read everything
                logger.debug("write %s not understood (%s): the next read after it is whole",
                             getattr(original, "__name__", original), exc)
                changes.need_whole()

    write._prism_notes_changes = True
    return write


def watch_writes(storage, changes: GraphChanges, methods: Iterable[str] | None = None) -> None:
    """Note every call of ``storage``'s public write methods in ``changes`` (wraps them on the instance, once)."""
    names = list(methods) if methods is not None else [*WRITE_METHODS, *WHOLE_METHODS]
    for name in names:
        original = getattr(storage, name, None)
        if original is None or getattr(original, "_prism_notes_changes", False):
            continue
        setattr(storage, name, _noting(original, WRITE_METHODS.get(name), changes))


# --- the same for a key-value storage's records (the passages' text_chunks) ------------------------------------------
class KeyChanges(_PositionLog):
    """Ids written (``upsert``) or deleted in one KV storage, each with the position of its last write, as noted by
    :func:`watch_keys`; ``drop`` or a call it cannot parse asks for a whole read. Views that read every record (the
    hipporag passages) read again only the ids noted since their last read (``views/passage_graph.py``)."""

    def __init__(self) -> None:
        super().__init__()
        self._ids: dict[str, int] = {}

    def note(self, ids: Iterable) -> None:
        self.position += 1
        self._ids.update((str(key), self.position) for key in ids)
        self._bound()

    def since(self, position: int) -> frozenset | None:
        """The ids written after ``position``; None when a change it cannot name came after it."""
        if self.whole_at > position:
            return None
        return frozenset(key for key, at in self._ids.items() if at > position)

    def forget_through(self, position: int) -> None:
        for key in [key for key, at in self._ids.items() if at <= position]:
            del self._ids[key]

    def __len__(self) -> int:
        return len(self._ids)


KEY_WRITE_METHODS: dict[str, Callable[..., Iterable]] = {
    "upsert": lambda data: list(data), "delete": lambda ids: list(ids),
}


def watch_keys(storage, changes: KeyChanges) -> None:
    """Note every ``upsert``/``delete`` of ``storage`` in ``changes``, and ``drop`` as a whole change (once)."""
    for name in (*KEY_WRITE_METHODS, "drop"):
        original = getattr(storage, name, None)
        if original is None or getattr(original, "_prism_notes_changes", False):
            continue
        setattr(storage, name, _noting(original, KEY_WRITE_METHODS.get(name), changes))

