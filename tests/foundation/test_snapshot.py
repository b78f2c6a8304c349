"""The graph snapshot: CSR structure, backend independence, and rebuild after every kind of graph change."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from lightrag_prism import PrismRAG
from lightrag_prism.snapshot import build_snapshot, rows_from, snapshot_from_storage
from tests.helpers import hash_embedding_func

NODES = [{"id": "A", "source_id": "c1<SEP>c2"}, {"id": "B", "source_id": "c2"}, {"id": "C", "source_id": "c3"},
         {"id": "D", "source_id": ""}]
EDGES = [{"source": "A", "target": "B", "weight": 2.0, "source_id": "c2"},
         {"source": "C", "target": "B", "weight": 1.5, "source_id": "c3"},
         {"source": "A", "target": "ghost", "weight": 1.0},  # endpoint missing: skipped
         {"source": "D", "target": "D", "weight": 1.0}]  # self loop: skipped


def test_build_snapshot_matches_networkx_adjacency():
    snap = build_snapshot(NODES, EDGES)
    graph = nx.Graph()
    graph.add_nodes_from(n["id"] for n in NODES)
    graph.add_weighted_edges_from([("A", "B", 2.0), ("C", "B", 1.5)])
    expected = nx.to_scipy_sparse_array(graph, nodelist=snap.node_ids, weight="weight").toarray()
    assert np.array_equal(snap.adj.toarray(), expected)
    assert snap.num_edges == 2
    # every CSR entry maps back to its edge
    rows = np.repeat(np.arange(snap.num_nodes), np.diff(snap.adj.indptr))
    for r, c, e in zip(rows, snap.adj.indices, snap.entry_edge):
        assert {snap.node_ids[r], snap.node_ids[c]} == set(snap.edge_key(e))
    assert snap.chunks_of_entity(snap.node_index["A"]) == ["c1", "c2"]
    assert snap.chunks_of_entity(snap.node_index["D"]) == []
    assert snap.chunks_of_edge(snap.edge_index()[("B", "C")]) == ["c3"]


def test_edge_of_finds_every_edge_and_nothing_else_as_the_edge_index_does():
    rng = np.random.default_rng(7)
    names = [f"n{i:02d}" for i in range(40)]
    pairs = {tuple(rng.choice(names, 2, replace=False)) for _ in range(120)}
    snap = build_snapshot([{"id": n} for n in names], [{"source": a, "target": b} for a, b in pairs])
    index = snap.edge_index()
    for a in names + ["ghost"]:
        for b in names + ["ghost"]:
            assert snap.edge_of(a, b) == index.get((a, b)), (a, b)


class PublicOnlyGraph:
    """A storage double with only the two public BaseGraphStorage reads the snapshot uses."""

    def __init__(self, nodes, edges):
        self.nodes, self.edges = nodes, edges

    async def get_all_nodes(self):
        return self.nodes

    async def get_all_edges(self):
        return self.edges


@pytest.mark.asyncio
async def test_snapshot_needs_only_the_public_storage_api():
    snap = await snapshot_from_storage(PublicOnlyGraph(NODES, EDGES))
    assert snap.node_ids == ["A", "B", "C", "D"] and snap.num_edges == 2


@pytest.mark.asyncio
async def test_queries_answer_from_the_previous_snapshot_while_a_refresh_builds_the_next():
    import asyncio

    from lightrag_prism.snapshot import SnapshotCache

    storage = PublicOnlyGraph(NODES[:2], EDGES[:1])
    cache = SnapshotCache(storage)
    old = await cache.get()
    storage.nodes, storage.edges = NODES, EDGES  # another process wrote
    started, release, bases = asyncio.Event(), asyncio.Event(), []

    async def prepare(snapshot, base):  # the views of the new snapshot take a while
        bases.append(base)
        started.set()
        await release.wait()

    refresh = asyncio.create_task(cache.refresh(prepare))
    await started.wait()
    assert await cache.get() is old  # meanwhile: the previous snapshot, without waiting
    release.set()
    await refresh
    new = await cache.get()
    assert new is not old and new.node_ids == ["A", "B", "C", "D"] and bases == [old] and cache.previous is old


DOCS = {"d1": "Alice Smith works at Acme Corp in Paris.", "d2": "Bob Jones met Carol White in Berlin."}


@pytest.mark.asyncio
async def test_snapshot_is_rebuilt_after_insert_delete_edit_and_merge(tmp_path):
    rag = PrismRAG(working_dir=str(tmp_path), workspace="snap", embedding_func=hash_embedding_func(),
                   entity_extract_max_gleaning=0)
    await rag.initialize_storages()
    await rag.ainsert(DOCS["d1"], ids=["d1"])
    first = await rag.graph_snapshot()
    assert await rag.graph_snapshot() is first  # cached while nothing changes
    assert {"Alice Smith", "Acme Corp", "Paris"} <= set(first.node_ids)

    await rag.ainsert(DOCS["d2"], ids=["d2"])  # insert
    after_insert = await rag.graph_snapshot()
    assert after_insert is not first and "Carol White" in after_insert.node_ids

    await rag.aedit_entity("Paris", {"description": "Capital of France"})  # edit
    after_edit = await rag.graph_snapshot()
    assert after_edit.node_data[after_edit.node_index["Paris"]]["description"] == "Capital of France"

    await rag.amerge_entities(["Bob Jones", "Carol White"], "Bob Jones")  # merge
    after_merge = await rag.graph_snapshot()
    assert "Carol White" not in after_merge.node_ids and "Bob Jones" in after_merge.node_ids

    await rag.adelete_by_doc_id("d1")  # delete
    after_delete = await rag.graph_snapshot()
    assert "Alice Smith" not in after_delete.node_ids
    assert len({id(s) for s in (first, after_insert, after_edit, after_merge, after_delete)}) == 5
    await rag.finalize_storages()


def test_rows_from_names_the_base_row_of_every_unchanged_node_and_edge():
    nodes = [{"id": n, "description": f"about {n}", "source_id": "c1"} for n in "abcd"]
    edges = [{"source": s, "target": t, "weight": 1.0, "description": f"{s}-{t}", "source_id": "c1"}
             for s, t in [("a", "b"), ("b", "c"), ("c", "d")]]
    base = build_snapshot(nodes, edges, 0)
    changed_nodes = [dict(n) for n in nodes if n["id"] != "d"] + [{"id": "e", "description": "new", "source_id": "c2"}]
    changed_nodes[1]["description"] = "about b, more"  # b changed
    changed_edges = [{**edges[0], "weight": 2.0},  # a-b changed
                     {**edges[1], "source": "c", "target": "b"},  # b-c stored the other way round: the same edge
                     {"source": "a", "target": "e", "weight": 1.0, "description": "a-e", "source_id": "c2"}]
    snap = build_snapshot(changed_nodes, changed_edges, 1)
    node_rows, edge_rows = rows_from(snap, base)
    expected_nodes = {"a": base.node_index["a"], "b": -1, "c": base.node_index["c"], "e": -1}
    assert dict(zip(snap.node_ids, node_rows.tolist())) == expected_nodes
    expected_edges = {("a", "b"): -1, ("b", "c"): base.edge_index()[("b", "c")], ("a", "e"): -1}
    assert {snap.edge_key(e): j for e, j in enumerate(edge_rows.tolist())} == expected_edges
    assert rows_from(snap, base)[0] is node_rows  # cached for this base
