"""A snapshot patched from the change log equals one built from the whole graph (snapshot.patch_snapshot,
graph_changes.py): through random writes on LightRAG's NetworkXStorage, and across two instances on one
working dir (a change the log cannot see makes the next build read everything)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from lightrag.kg import networkx_impl

from lightrag_prism import PrismRAG
from lightrag_prism.graph_changes import GraphChanges, KeyChanges, Written, watch_keys, watch_writes
from lightrag_prism.retrievers.views.passage_rank import name_keys
from lightrag_prism.retrievers.views import fastrp as fastrp_view
from lightrag_prism.snapshot import GraphSnapshot, SnapshotCache, build_snapshot, node_moves, rows_from
from tests.helpers import hash_embedding_func

pytestmark = pytest.mark.asyncio


def assert_same(patched: GraphSnapshot, built: GraphSnapshot) -> None:
    assert patched.node_ids == built.node_ids and patched.node_index == built.node_index
    assert patched.node_data == built.node_data and patched.edge_data == built.edge_data
    for name in ("edge_src", "edge_tgt", "entry_edge"):
        assert np.array_equal(getattr(patched, name), getattr(built, name)), name
    assert patched.chunk_ids == built.chunk_ids and patched.chunk_index == built.chunk_index
    for name in ("adj", "entity_chunks", "relation_chunks"):
        a, b = getattr(patched, name), getattr(built, name)
        assert a.shape == b.shape, name
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(a, part), getattr(b, part)), f"{name}.{part}"


def chunks(rng: random.Random) -> str:
    return "<SEP>".join(sorted({f"chunk-{rng.randint(0, 30)}" for _ in range(rng.randint(0, 3))}))


async def random_writes(storage, rng: random.Random, step: int) -> None:
    """A few writes through every public write method (as LightRAG's insert, delete, edit and merge make them)."""
    for _ in range(rng.randint(0, 8)):
        a, b = f"n{rng.randint(0, 40)}", f"n{rng.randint(0, 40)}"
        node = {"entity_id": a, "description": f"{a}@{step}", "entity_type": "x", "source_id": chunks(rng)}
        edge = {"weight": float(rng.randint(1, 4)), "description": f"{a} and {b}", "keywords": "k",
                "source_id": chunks(rng)}
        roll = rng.random()
        if roll < 0.08:
            await storage.delete_node(a)
        elif roll < 0.14:
            await storage.remove_nodes([a, b])
        elif roll < 0.22:
            await storage.remove_edges([(b, a)])  # either orientation
        elif roll < 0.3:
            await storage.delete_node(a)  # removed, then written back with one edge: its other edges stay gone
            await storage.upsert_node(a, node)
            await storage.upsert_edge(a, b, edge)
        elif roll < 0.45:
            await storage.upsert_nodes_batch([(a, node)])
            await storage.upsert_edges_batch([(b, a, edge)])
        elif roll < 0.55:
            await storage.upsert_edge(b, a, edge)  # an endpoint the graph lacks is created bare
        elif roll < 0.7:
            await storage.upsert_node(a, {**node, "description": f"{a} again"})
        elif a != b:
            await storage.upsert_node(a, node)
            await storage.upsert_edge(a, b, edge)


async def test_a_patched_snapshot_equals_a_whole_build_through_random_writes(tmp_path):
    from lightrag.kg.shared_storage import initialize_share_data

    initialize_share_data()
    storage = networkx_impl.NetworkXStorage(namespace="chunk_entity_relation", workspace="patch",
                                            global_config={"working_dir": str(tmp_path)}, embedding_func=None)
    await storage.initialize()
    cache, rng, carried_views = SnapshotCache(storage), random.Random(7), 0
    for step in range(120):
        await random_writes(storage, rng, step)
        if step % 7 == 3:
            continue  # several steps of writes between two builds
        if step == 60:
            await storage.drop()  # a write the log cannot name: read everything
            await storage.upsert_node("n1", {"entity_id": "n1", "description": "after the drop",
                                             "source_id": "chunk-1"})
        cache.invalidate()
        base = cache.current
        snapshot = await cache.get()
        built = build_snapshot(await storage.get_all_nodes(), await storage.get_all_edges())
        assert_same(snapshot, built)
        if base is not None and "rows_from" in snapshot.derived:  # carried rows: as the comparing pass finds them
            nodes, edges = rows_from(built, base)
            assert np.array_equal(snapshot.derived["rows_from"][1], nodes)
            assert np.array_equal(snapshot.derived["rows_from"][2], edges)
        carried_views += assert_views_carried_as_built(snapshot, built, base)
    assert cache.patches >= 90 and cache.builds - cache.patches >= 2  # the first build and the one after drop()
    assert carried_views >= 90
    assert len(cache.changes) == 0  # nothing is kept that no snapshot needs


def assert_views_carried_as_built(snapshot: GraphSnapshot, built: GraphSnapshot, base: GraphSnapshot | None) -> bool:
    """The name keys and FastRP layout carried over from ``base`` by the patch's node moves equal what the passes
    over every node give (``built`` has no moves); True when they were carried."""
    carried = node_moves(snapshot, base) is not None
    keys, reference = name_keys(snapshot, base), name_keys(built)
    assert {k: sorted(v) for k, v in keys.items()} == {k: sorted(v) for k, v in reference.items()}
    old = base.derived.get(fastrp_view.FASTRP_KEY) if base is not None else None
    if old is not None:  # old rows first, tombstones for the deleted, a returning name back on its row
        (order, rows, tombstones), (order_ref, rows_ref, tombstones_ref) = (
            fastrp_view._grown_layout(s, base, old) for s in (snapshot, built))
        assert order == order_ref and np.array_equal(rows, rows_ref) and tombstones == tombstones_ref
    fastrp_view.fastrp_cache(snapshot, base)  # the next step's base carries it
    return carried


async def test_a_write_that_fails_midway_is_still_read_again():
    class FailingGraph:
        async def upsert_node(self, node_id, node_data):
            raise ConnectionResetError("lost midway")

    changes = GraphChanges()
    graph = FailingGraph()
    watch_writes(graph, changes, ["upsert_node"])
    with pytest.raises(ConnectionResetError):
        await graph.upsert_node("A", {"description": "maybe stored"})
    assert changes.since(0).nodes == {"A"}


async def test_a_call_the_log_cannot_parse_asks_for_a_whole_read():
    class OddGraph:
        async def upsert_edges_batch(self, edges):
            return None

    changes = GraphChanges()
    graph = OddGraph()
    watch_writes(graph, changes, ["upsert_edges_batch"])
    await graph.upsert_edges_batch([("A", "B")])  # no data member: not what LightRAG's signature says
    assert changes.since(0) is None
    changes.note(Written(nodes=("C",)))
    assert changes.since(changes.whole_at).nodes == {"C"}


async def test_a_log_past_its_limit_is_dropped_for_a_whole_read(monkeypatch):
    from lightrag_prism import graph_changes

    monkeypatch.setattr(graph_changes, "LOG_LIMIT", 5)
    changes = GraphChanges()
    changes.note(Written(nodes=("a", "b"), edges=(("a", "b"),)))
    assert changes.since(0).nodes == {"a", "b"}
    changes.note(Written(nodes=("c", "d", "e")))
    assert changes.since(0) is None and len(changes) == 0  # memory bounded; the next build reads everything


async def test_the_record_log_notes_upserts_and_deletes_and_asks_for_a_whole_read_otherwise(monkeypatch):
    from lightrag_prism import graph_changes

    class Store:
        async def upsert(self, data):
            if data and "bad" in data:
                raise RuntimeError("write failed midway")

        async def delete(self, ids):
            return None

        async def drop(self):
            return None

    changes, store = KeyChanges(), Store()
    watch_keys(store, changes)
    watch_keys(store, changes)  # once only
    await store.upsert({"c1": {}, "c2": {}})
    at = changes.position
    await store.delete(["c2", "c3"])
    assert changes.since(0) == {"c1", "c2", "c3"} and changes.since(at) == {"c2", "c3"}
    with pytest.raises(RuntimeError):
        await store.upsert({"bad": {}})
    assert "bad" in changes.since(at)  # noted even though it failed
    changes.forget_through(at)
    assert len(changes) == 3 and changes.since(at) == {"c2", "c3", "bad"}
    await store.upsert(None)  # arguments it cannot name
    assert changes.since(at) is None and changes.since(changes.position) == frozenset()
    await store.drop()
    assert changes.since(changes.position - 1) is None
    monkeypatch.setattr(graph_changes, "LOG_LIMIT", 4)
    await store.upsert({f"x{i}": {} for i in range(5)})
    assert len(changes) == 0 and changes.since(changes.position - 1) is None  # bounded: the next read is whole


async def test_a_change_made_by_another_instance_is_read_whole(tmp_path):
    """Two instances on one working dir (as LightRAG Server's workers): the other's insert reaches this one's graph
    storage by a reload its write methods never see. This instance's next change notices the other's graph version
    and reads everything, so its snapshot has both documents even before its watcher polls."""
    def instance():
        return PrismRAG(working_dir=str(tmp_path), workspace="shared", embedding_func=hash_embedding_func(),
                        shared_version_interval=0)

    first, second = instance(), instance()
    await first.initialize_storages()
    await second.initialize_storages()
    try:
        await first.ainsert("Alice Smith works at Acme Corp in Paris.", ids=["d1"])
        await second.ainsert("Bob Jones met Carol White in Berlin.", ids=["d2"])
        # d1 again under its id with other text: same chunk id, new content, written by the other instance only.
        await second.adelete_by_doc_id("d1")
        await second.ainsert("Alice Smith moved to Rome.", ids=["d1"])
        await first.ainsert("Dora Kent lives in Oslo.", ids=["d3"])
        snapshot = await first.graph_snapshot()
        assert {"Alice Smith", "Bob Jones", "Carol White", "Dora Kent"} <= set(snapshot.node_ids)
        passages = snapshot.derived["hipporag_graph"]  # prepared by the insert; records read whole, not carried
        contents = {pid: d["content"] for pid, d in zip(passages.passage_ids, passages.passage_data)}
        assert "Alice Smith moved to Rome." in contents.values() and len(contents) == 3
        built = build_snapshot(await first.chunk_entity_relation_graph.get_all_nodes(),
                               await first.chunk_entity_relation_graph.get_all_edges())
        assert_same(snapshot, built)
    finally:
        await first.finalize_storages()
        await second.finalize_storages()
