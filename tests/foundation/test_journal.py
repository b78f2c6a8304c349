"""Journaled file stores (lightrag_prism/journal.py, lightrag_prism/storages/).

Each kind of store is driven through random upserts and deletes, flushed through the journal after every step;
reading the file back (base + journal, as PrismRAG's storages load it) must give exactly the live
content, and so must LightRAG's unpatched reader after a compaction. Plus: stale and torn journals, the
compaction threshold, and a PrismRAG insert whose stores are journaled until ``finalize_storages``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random

import networkx as nx
import numpy as np
import pytest
import lightrag.utils
from nano_vectordb import NanoVectorDB as StockNanoVectorDB

from lightrag_prism import journal
from lightrag_prism.storages import (JournaledNanoVectorDB, PrismJsonDocStatusStorage, PrismJsonKVStorage,
                                     PrismNetworkXStorage)
from lightrag_prism.storages.graphml import write_graphml
from lightrag_prism.storages.json_stores import write_journaled
from tests.helpers import hash_embedding_func


def load_json(file_name, kind=journal.TrackedKVKind):
    """A JSON store's file as PrismRAG's store loads it: the file, then its journal."""
    loaded = lightrag.utils.load_json(file_name)
    return loaded if loaded is None else journal.replay(file_name, kind, loaded)


def kv_write(data, file_name):
    """A KV store's flush of ``data``; True when LightRAG's writer sanitised a value."""
    return write_journaled(data, file_name, journal.TrackedKVKind)


def load_graph(file_name):
    """The graph file as PrismRAG's graph storage loads it."""
    return journal.replay(file_name, journal.GraphKind, nx.read_graphml(file_name)) if os.path.exists(file_name) \
        else None

DIM = 8


@pytest.fixture
def registered(tmp_path):
    names = []

    def register(name: str) -> journal.FileState:
        path = str(tmp_path / name)
        names.append(path)
        return journal.register(path)

    yield register
    for name in names:
        journal.unregister(name)


def write_kv(data: dict, path: str) -> None:
    with open(path, "w") as handle:
        json.dump(data, handle)


def test_kv_store_read_back_equals_the_live_dict_after_every_flush(registered, tmp_path):
    rng = random.Random(1)
    state = registered("kv.json")
    live: dict = {}
    for step in range(60):
        for _ in range(rng.randint(1, 5)):
            key = f"k{rng.randint(0, 30)}"
            if rng.random() < 0.3:
                live.pop(key, None)
            else:
                live[key] = {"v": rng.random(), "step": step}  # values replaced, never mutated
        snapshot = dict(live)
        journal.flush(state, journal.KVKind, snapshot, lambda s=snapshot: write_kv(s, state.file_name))
        assert load_json(state.file_name) == live
    assert state.appends > 0 and state.rewrites >= 1
    assert os.path.exists(journal.journal_path(state.file_name))
    assert journal.compact(state)
    assert not os.path.exists(journal.journal_path(state.file_name))
    with open(state.file_name) as handle:
        assert json.load(handle) == live  # the plain file alone


def nano_rows(db) -> tuple[list[dict], np.ndarray]:
    storage = db._NanoVectorDB__storage
    return [dict(row) for row in storage["data"]], storage["matrix"].copy()


def test_vector_store_read_back_equals_a_whole_rewrite_read_back_bit_for_bit(registered, tmp_path):
    rng = np.random.default_rng(2)
    state = registered("vdb.json")
    live = JournaledNanoVectorDB(DIM, storage_file=state.file_name)
    storage = live._NanoVectorDB__storage
    kind = type(live).rows_kind
    journal.adopt(state, kind, storage)

    def whole():
        live.save()

    stock = StockNanoVectorDB(DIM, storage_file=str(tmp_path / "stock.json"))  # the same calls, nano-vectordb's own class
    for step in range(40):
        ids = [f"id{i}" for i in rng.integers(0, 50, size=rng.integers(1, 6))]  # repeats: the last one wins
        batch = [{"__id__": i, "__vector__": rng.standard_normal(DIM), "content": f"{i}@{step}"} for i in ids]
        assert live.upsert([dict(d) for d in batch]) == stock.upsert([dict(d) for d in batch])
        if step % 3 == 0:
            gone = [f"id{i}" for i in rng.integers(0, 50, size=3)]
            live.delete(gone)
            stock.delete(gone)
        # Appending into spare rows gives exactly the rows and matrix nano-vectordb's own upsert gives.
        (live_rows, live_matrix), (stock_rows, stock_matrix) = nano_rows(live), nano_rows(stock)
        assert live_rows == stock_rows and np.array_equal(live_matrix, stock_matrix)
        # upsert and delete keep the id -> row index current: no rebuild, and each id at its row
        assert live.current_row_index() == {row["__id__"]: i for i, row in enumerate(live_rows)}
        touched = {f"id{i}" for i in rng.integers(0, 55, size=4)}
        saved = {row["__id__"]: row for row in storage["data"][::2]}  # every other row as if saved, others not
        assert kind.with_index(live.current_row_index).changes(saved, storage, touched) == \
            kind.changes(saved, storage, touched)  # the index finds the rows the pass finds
        asked = [f"id{i}" for i in rng.integers(0, 55, size=3)]  # a few ids, some unknown: the id -> row index
        assert live.get(asked) == stock.get(asked) and live.get(asked + asked * 9) == stock.get(asked)
        journal.flush(state, kind, storage, whole)
        rows, matrix = nano_rows(JournaledNanoVectorDB(DIM, storage_file=state.file_name))
        # The reference: the live store saved whole and read by nano-vectordb itself (which normalises on load).
        path, live.storage_file = live.storage_file, str(tmp_path / "whole.json")
        live.save()
        live.storage_file = path
        ref_rows, ref_matrix = nano_rows(StockNanoVectorDB(DIM, storage_file=str(tmp_path / "whole.json")))
        by_id = {row["__id__"]: (row, matrix[i]) for i, row in enumerate(rows)}
        assert len(rows) == len(ref_rows)
        for i, row in enumerate(ref_rows):
            assert by_id[row["__id__"]][0] == row
            assert np.array_equal(by_id[row["__id__"]][1], ref_matrix[i])
    assert state.appends > 0
    assert journal.compact(state)
    stock_rows, _ = nano_rows(StockNanoVectorDB(DIM, storage_file=state.file_name))
    assert sorted(r["__id__"] for r in stock_rows) == sorted(r["__id__"] for r in nano_rows(live)[0])


@pytest.mark.parametrize("gone", [[0], [29], [0, 1, 2], [3, 9, 10, 28], list(range(30)), [5, 5, 99]])
def test_vector_store_delete_compacts_in_place_to_what_nano_vectordb_gives(tmp_path, gone):
    """The in-place delete (first row, last row, runs, everything, repeats, an unknown id) leaves the rows and
    matrix nano-vectordb's own delete leaves, keeps the spare capacity, and the next upsert appends after it."""
    rng = np.random.default_rng(len(gone))
    live = JournaledNanoVectorDB(DIM, storage_file=str(tmp_path / "live.json"))
    stock = StockNanoVectorDB(DIM, storage_file=str(tmp_path / "stock.json"))
    for client in (live, stock):
        client.upsert([{"__id__": f"id{i}", "__vector__": v, "n": i}
                       for i, v in enumerate(np.random.default_rng(0).standard_normal((30, DIM)))])
    buffer, rows = live._prism_buffer, live._NanoVectorDB__storage["data"]
    live.get(["id0"])  # builds the id -> row index
    index = live.current_row_index()
    live.delete([f"id{i}" for i in gone])
    stock.delete([f"id{i}" for i in gone])
    (live_rows, live_matrix), (stock_rows, stock_matrix) = nano_rows(live), nano_rows(stock)
    assert live_rows == stock_rows and np.array_equal(live_matrix, stock_matrix)
    assert live._NanoVectorDB__storage["matrix"].base is buffer  # compacted where it was, no new matrix
    assert live._NanoVectorDB__storage["data"] is rows  # the same row list, shortened
    # the same index, kept current: the rows after a removed one moved up
    assert live.current_row_index() is index == {row["__id__"]: i for i, row in enumerate(live_rows)}
    more = [{"__id__": f"new{i}", "__vector__": v} for i, v in enumerate(rng.standard_normal((3, DIM)))]
    assert live.upsert([dict(d) for d in more]) == stock.upsert([dict(d) for d in more])
    (live_rows, live_matrix), (stock_rows, stock_matrix) = nano_rows(live), nano_rows(stock)
    assert live_rows == stock_rows and np.array_equal(live_matrix, stock_matrix)


def test_vector_store_changes_without_a_current_index_are_found_by_a_pass(tmp_path):
    live = JournaledNanoVectorDB(DIM, storage_file=str(tmp_path / "live.json"))
    live.upsert([{"__id__": f"id{i}", "__vector__": np.ones(DIM) * (i + 1)} for i in range(6)])
    storage = live._NanoVectorDB__storage
    saved = {row["__id__"]: row for row in storage["data"]}
    live.upsert([{"__id__": "id2", "__vector__": np.ones(DIM)}, {"__id__": "id9", "__vector__": np.ones(DIM)}])
    live.delete(["id4"])
    kind = type(live).rows_kind
    expected = {"u": [[storage["data"][2], journal._b64(storage["matrix"][2])],
                      [storage["data"][5], journal._b64(storage["matrix"][5])]], "d": ["id4"]}
    touched = {"id2", "id4", "id9", "id77"}
    assert kind.with_index(live.current_row_index).changes(saved, storage, touched) == expected
    storage["data"] = list(storage["data"])  # another list (as a reload gives): the index is not current
    assert live.current_row_index() is None
    assert kind.with_index(live.current_row_index).changes(saved, storage, touched) == expected


def test_vector_store_delete_of_a_read_only_matrix_is_nano_vectordbs_own(tmp_path):
    live = JournaledNanoVectorDB(DIM, storage_file=str(tmp_path / "live.json"))
    live.upsert([{"__id__": f"id{i}", "__vector__": np.ones(DIM) * (i + 1)} for i in range(4)])
    storage = live._NanoVectorDB__storage
    storage["matrix"] = storage["matrix"].copy()
    storage["matrix"].flags.writeable = False
    frozen = storage["matrix"]
    live.delete(["id1"])
    assert [row["__id__"] for row in storage["data"]] == ["id0", "id2", "id3"]
    assert np.array_equal(storage["matrix"], np.delete(frozen, 1, axis=0)) and storage["matrix"] is not frozen


def graph_content(graph) -> tuple[dict, dict]:
    """Every node and edge with its attributes (the journal notes the keys only)."""
    return ({node: dict(attrs) for node, attrs in graph.nodes(data=True)},
            {journal.edge_key(u, v): dict(attrs) for u, v, attrs in graph.edges(data=True)})


class UntrackedGraph(journal.GraphKind):
    tracked = False  # every flush compares the whole graph


def read_back_unnoted(path: str, load):
    """``load(path)`` without the load noting its content in the file's state (which would make it tracked)."""
    state = journal._FILES.pop(os.path.abspath(path))
    try:
        return load(path)
    finally:
        journal._FILES[state.file_name] = state


def test_an_untracked_graph_reads_back_equal_to_the_live_graph_after_every_flush(registered):
    """Changed in place, unseen by any hook: with no copy of the attributes to compare with, every such flush
    rewrites the file, which reads back equal."""
    rng = random.Random(3)
    state = registered("g.graphml")
    live = nx.Graph()
    for step in range(50):
        for _ in range(rng.randint(1, 6)):
            a, b = f"n{rng.randint(0, 25)}", f"n{rng.randint(0, 25)}"
            roll = rng.random()
            if roll < 0.15 and a in live:
                live.remove_node(a)
            elif roll < 0.25 and live.has_edge(a, b):
                live.remove_edge(a, b)
            elif roll < 0.35 and a in live and "extra" in live.nodes[a]:
                del live.nodes[a]["extra"]  # an attribute removed in place
            elif a != b:
                live.add_node(a, description=f"{a}@{step}", extra=step)
                live.add_node(b, description=f"{b}@{step}")
                live.add_edge(a, b, weight=float(step), keywords=f"{a}-{b}")
        journal.flush(state, UntrackedGraph, live, lambda: write_graphml(live, state.file_name))
        read = read_back_unnoted(state.file_name, load_graph)
        assert graph_content(read) == graph_content(live)
    assert state.appends == 0 and state.rewrites == 50 and state.touched is None
    assert graph_content(nx.read_graphml(state.file_name)) == graph_content(live)


def test_a_graph_storage_flush_journals_what_its_write_api_changed(registered, tmp_path):
    """Through ``NetworkXStorage``'s own upserts and removals (tracked: a flush looks only at what they touched),
    the file read back equals the live graph after every flush, and a flush appends only the touched items."""
    from lightrag.kg.shared_storage import initialize_share_data

    initialize_share_data()
    rng = random.Random(4)

    async def run():
        storage = PrismNetworkXStorage(namespace="chunk_entity_relation", workspace="t",
                                       global_config={"working_dir": str(tmp_path)}, embedding_func=None)
        await storage.initialize()
        state = registered("t/graph_chunk_entity_relation.graphml")
        assert state.file_name == os.path.abspath(storage._graphml_xml_file)
        journal.adopt(state, journal.GraphKind, storage._graph)
        live = storage._graph
        for step in range(60):
            for _ in range(rng.randint(1, 6)):
                a, b = f"n{rng.randint(0, 25)}", f"n{rng.randint(0, 25)}"
                roll = rng.random()
                if roll < 0.1 and a in live:
                    await (storage.delete_node(a) if rng.random() < 0.5 else storage.remove_nodes([a, b]))
                elif roll < 0.2 and live.has_edge(a, b):
                    await storage.remove_edges([(b, a)])  # either orientation
                elif roll < 0.3 and a != b:
                    await storage.upsert_nodes_batch([(a, {"description": f"{a}@{step}", "entity_type": "x"})])
                    await storage.upsert_edges_batch([(a, b, {"weight": str(step), "keywords": f"{a}-{b}"})])
                elif a != b:
                    await storage.upsert_node(a, {"description": f"{a}@{step}", "extra": str(step)})
                    await storage.upsert_edge(b, a, {"weight": str(step), "keywords": f"{a}-{b}"})  # b's node implied
            appends = state.appends
            await storage.index_done_callback()
            assert graph_content(load_graph(state.file_name)) == graph_content(live)
            assert state.touched == set()
            assert state.appends == appends + 1 or state.rewrites  # the first flush of an empty file rewrites
        # A flush with nothing touched appends nothing, even though the whole graph is there to compare.
        appends = state.appends
        await storage.index_done_callback()
        assert state.appends == appends
        await storage.upsert_node("n1", {"description": "changed once more"})
        await storage.index_done_callback()
        last = journal.read_journal(state.file_name)[-1]
        assert last["nu"] == [["n1", {"description": "changed once more", **{
            k: v for k, v in live.nodes["n1"].items() if k != "description"}}]] and not last["eu"]

    asyncio.run(run())


def test_the_doc_status_store_journals_every_write_and_persists_each_upsert_before_it_returns(registered, tmp_path):
    """Through ``JsonDocStatusStorage``'s own writes (tracked by the ids they name): after every write that persists
    at once (upsert, field update) the file read back already holds it, a row changed in place and upserted again
    included; deletes reach the file at the next flush, a drop empties it."""
    from lightrag.kg.shared_storage import initialize_share_data

    initialize_share_data()
    rng = random.Random(5)

    def read_back(path):
        return load_json(path, journal.DocStatusKind) or {}

    async def run():
        storage = PrismJsonDocStatusStorage(
            namespace="doc_status", workspace="ds", global_config={"working_dir": str(tmp_path)}, embedding_func=None)
        state = registered("ds/kv_store_doc_status.json")
        await storage.initialize()
        mine: dict = {}  # rows this test upserted, kept and changed in place as a caller may
        for step in range(60):
            doc = f"doc-{rng.randint(0, 15)}"
            roll = rng.random()
            if roll < 0.2 and doc in storage._data:
                await storage.delete([doc])
                mine.pop(doc, None)
                await storage.index_done_callback()
            elif roll < 0.4 and doc in storage._data:
                await storage.update_doc_status_fields(doc, {"status": "processed", "chunks_count": step})
            elif doc in mine and roll < 0.6:
                mine[doc]["status"] = f"changed in place {step}"  # the same object, upserted again
                await storage.upsert({doc: mine[doc]})
            else:
                mine[doc] = {"status": "pending", "content_summary": f"{doc}@{step}", "created_at": "t",
                             "updated_at": "t", "file_path": f"{doc}.txt", "chunks_list": [f"c{step}"]}
                await storage.upsert({doc: mine[doc]})
            assert read_back(state.file_name) == dict(storage._data)  # persisted when the write returned
        assert state.appends > 0 and state.touched == set() and not state.pinned
        await storage.drop()
        assert read_back(state.file_name) == {}

    asyncio.run(run())


def kv_storage(tmp_path, namespace: str, workspace: str):
    from lightrag.kg.shared_storage import initialize_share_data

    initialize_share_data()
    return PrismJsonKVStorage(namespace=namespace, workspace=workspace,
                              global_config={"working_dir": str(tmp_path)}, embedding_func=None)


def read_kv_aside(path: str) -> dict:
    """The file and its journal as the next process reads them, without noting that content in this process's
    state as PrismRAG's loader does (a load starts untracked: the next flush would compare everything)."""
    from lightrag.utils import load_json

    data = load_json(path) or {}
    for record in journal.read_journal(path):
        journal.KVKind.apply(data, record)
    return data


def test_a_kv_store_journals_exactly_the_keys_its_writes_named(registered, tmp_path):
    """Through ``JsonKVStorage``'s own writes (tracked by the keys they name): after every flush the file read back
    equals the live dict, a value changed in place and upserted again included (a pass comparing identities would
    miss it), each appended record names only the keys written since the flush before, and a drop empties the file.
    The first flush after the load compares everything (a write the hooks cannot see may come first)."""
    rng = random.Random(6)

    async def run():
        storage = kv_storage(tmp_path, "entity_chunks", "kv")
        state = registered("kv/kv_store_entity_chunks.json")
        await storage.initialize()
        await storage.upsert({f"e{i}": {"chunk_ids": [f"c{i}"]} for i in range(40)})
        await storage.index_done_callback()
        assert state.touched == set() and state.rewrites == 1
        for step in range(60):
            written = set()
            for _ in range(rng.randint(1, 4)):
                key = f"e{rng.randint(0, 50)}"
                written.add(key)
                roll = rng.random()
                if roll < 0.25:
                    await storage.delete([key])
                elif roll < 0.5 and key in storage._data:
                    row = storage._data[key]
                    row["chunk_ids"].append(f"s{step}")  # the stored object itself, upserted again
                    await storage.upsert({key: row})
                else:
                    await storage.upsert({key: {"chunk_ids": [f"s{step}"]}})
            appends = state.appends
            await storage.index_done_callback()
            assert read_kv_aside(state.file_name) == dict(storage._data)
            if state.appends > appends:
                record = journal.read_journal(state.file_name)[-1]
                assert set(record.get("u", {})) | set(record.get("d", ())) <= written
        assert state.appends > 20
        assert load_json(state.file_name) == dict(storage._data)  # the file as PrismRAG's store loads it
        assert state.touched is None  # a load is not tracked: the next flush compares everything
        await storage.upsert({"late": {"chunk_ids": ["c"]}})
        await storage.index_done_callback()
        assert state.touched == set() and read_kv_aside(state.file_name) == dict(storage._data)
        await storage.drop()
        assert read_kv_aside(state.file_name) == {} and load_json(state.file_name) == {}

    asyncio.run(run())


def test_legacy_cache_migration_after_a_load_reaches_the_file(registered, tmp_path):
    """LightRAG migrates an old nested LLM cache right after loading it and writes the file itself, through no
    write the hooks see: the first flush after a load compares everything, so the migrated keys are written."""
    state = registered("old/kv_store_llm_response_cache.json")
    os.makedirs(os.path.dirname(state.file_name))
    legacy = {"default": {f"h{i}": {"return": f"answer {i}", "cache_type": "extract"} for i in range(3)}}
    write_kv(legacy, state.file_name)

    async def run():
        storage = kv_storage(tmp_path, "llm_response_cache", "old")
        await storage.initialize()
        migrated = dict(storage._data)
        assert len(migrated) == 3 and "default" not in migrated
        await storage.upsert({"default:extract:new": {"return": "fresh"}})
        await storage.index_done_callback()
        assert load_json(state.file_name) == dict(storage._data)

    asyncio.run(run())


def flush_kv(state: journal.FileState, *versions: dict) -> None:
    """Flush each version of a KV store in turn (the first rewrites the file, the later ones append)."""
    for data in versions:
        journal.flush(state, journal.KVKind, dict(data), lambda d=data: write_kv(d, state.file_name))


def test_a_journal_is_never_replayed_over_a_base_rewritten_after_it(registered):
    state = registered("kv.json")
    flush_kv(state, {"a": {"v": 1}}, {"a": {"v": 2}, "b": {"v": 3}})
    assert os.path.exists(journal.journal_path(state.file_name))
    # A writer that does not journal replaces the base (an unregistered instance, or stock LightRAG).
    os.replace(write_temp(state.file_name, {"a": {"v": 9}}), state.file_name)
    assert load_json(state.file_name) == {"a": {"v": 9}}
    assert not os.path.exists(journal.journal_path(state.file_name))


def write_temp(path: str, data: dict) -> str:
    tmp = path + ".tmp"
    write_kv(data, tmp)
    return tmp


def test_a_torn_last_line_is_dropped_and_cut_before_the_next_append(registered):
    state = registered("kv.json")
    data = {"a": {"v": 1}, "b": {"v": 2}}
    flush_kv(state, {"a": {"v": 1}}, data)
    with open(journal.journal_path(state.file_name), "ab") as handle:
        handle.write(b'{"u": {"c": {"v"')  # a crash in the middle of an append
    assert load_json(state.file_name) == data  # replay adopts the state and cuts the tail
    data = {"a": {"v": 1}, "b": {"v": 2}, "d": {"v": 4}}
    flush_kv(state, data)
    assert load_json(state.file_name) == data


def test_the_journal_is_compacted_once_it_reaches_half_the_base(registered, monkeypatch):
    monkeypatch.setattr(journal, "MIN_COMPACT_BYTES", 0)
    state = registered("kv.json")
    data = {f"k{i}": {"v": "x" * 100} for i in range(100)}  # ~12 KB base
    journal.flush(state, journal.KVKind, dict(data), lambda: write_kv(data, state.file_name))
    record = 150  # bytes of one step's journal line, about
    for step in range(200):
        data = dict(data, **{f"new{step}": {"v": "y" * 100}})
        snapshot = dict(data)
        journal.flush(state, journal.KVKind, snapshot, lambda s=snapshot: write_kv(s, state.file_name))
        assert state.journal_bytes <= journal.COMPACT_RATIO * os.path.getsize(state.file_name) + record
    assert state.rewrites >= 3  # 12 KB -> 18 KB -> 27 KB -> ...
    assert load_json(state.file_name) == data


def test_a_prism_insert_is_journaled_until_finalize_and_reads_back_equal(tmp_path):
    from lightrag_prism import PrismRAG

    async def run():
        rag = PrismRAG(working_dir=str(tmp_path), workspace="j", embedding_func=hash_embedding_func())
        await rag.initialize_storages()
        texts = [f"Ada Finch{i} founded Harbour Mill{i} in Lyon. The mill{i} sells bread to Vexholm." for i in range(6)]
        await rag.ainsert(texts[:3], ids=["a", "b", "c"])
        await rag.ainsert(texts[3:], ids=["d", "e", "f"])  # the second run's flushes append
        await rag.adelete_by_doc_id("b")
        # LightRAG's graph edits: every one must reach the journal through the tracked write API.
        names = sorted(rag.chunk_entity_relation_graph._graph.nodes)
        await rag.aedit_entity(names[0], {"description": "edited in place"})
        await rag.acreate_entity("Journal Test Entity", {"description": "made by hand", "entity_type": "thing"})
        await rag.acreate_relation("Journal Test Entity", names[1], {"description": "linked by hand",
                                                                     "keywords": "test"})
        await rag.amerge_entities([names[2], names[3]], names[2])
        await rag.adelete_by_entity(names[4])
        workdir = tmp_path / "j"
        journals = sorted(p.name for p in workdir.glob("*" + journal.JOURNAL_SUFFIX))
        assert "vdb_entities.json" + journal.JOURNAL_SUFFIX in journals
        assert "graph_chunk_entity_relation.graphml" + journal.JOURNAL_SUFFIX in journals
        graph_file = str(workdir / "graph_chunk_entity_relation.graphml")
        live_graph = rag.chunk_entity_relation_graph._graph
        assert graph_content(load_graph(graph_file)) == graph_content(live_graph)
        for vdb in (rag.entities_vdb, rag.relationships_vdb, rag.chunks_vdb):
            await vdb.index_done_callback()  # its pending rows applied and flushed
            read_rows, read_matrix = nano_rows(JournaledNanoVectorDB(
                rag.embedding_func.embedding_dim, storage_file=vdb._client_file_name))
            live_rows, live_matrix = nano_rows(vdb._client)
            by_id = {row["__id__"]: (row, read_matrix[i]) for i, row in enumerate(read_rows)}
            assert sorted(by_id) == sorted(row["__id__"] for row in live_rows)
            for i, row in enumerate(live_rows):
                assert by_id[row["__id__"]][0] == row
                assert np.allclose(by_id[row["__id__"]][1], live_matrix[i], atol=1e-6)
        chunks_file = str(workdir / "vdb_chunks.json")
        read = sorted(r["__id__"] for r in nano_rows(JournaledNanoVectorDB(
            rag.embedding_func.embedding_dim, storage_file=chunks_file))[0])
        await rag.finalize_storages()
        assert list(workdir.glob("*" + journal.JOURNAL_SUFFIX)) == []
        assert graph_content(nx.read_graphml(graph_file)) == graph_content(live_graph)  # stock reader, base alone
        stock = sorted(r["__id__"] for r in nano_rows(StockNanoVectorDB(rag.embedding_func.embedding_dim,
                                                                        storage_file=chunks_file))[0])
        assert stock == read
        assert journal.registered(graph_file) is None

    asyncio.run(run())


@pytest.mark.parametrize("unflushed", [False, True])
def test_a_second_instance_in_the_process_appends_to_the_stores_it_shares(tmp_path, unflushed):
    """LightRAG loads a JSON store once per process: an instance made after another's finalize_storages shares the
    loaded dict and reads no file. When that dict is what the file holds, its flushes append (no whole rewrite);
    when it holds a change never flushed, the first flush rewrites the file whole, so the change is not lost."""
    from lightrag_prism import PrismRAG

    def instance():
        # LightRAG shares a namespace's dict per process and workspace: one workspace per case
        return PrismRAG(working_dir=str(tmp_path), workspace=f"shared{unflushed}", embedding_func=hash_embedding_func())

    async def run():
        first = instance()
        await first.initialize_storages()
        await first.ainsert(["Ada Finch founded Harbour Mill in Lyon."], ids=["a"])
        await first.finalize_storages()
        if unflushed:  # a change made to the shared dict after the flush, which no write ever persisted
            first.text_chunks._data["orphan"] = {"content": "never flushed"}
        second = instance()
        await second.initialize_storages()
        chunks_file = second.text_chunks._file_name
        await second.ainsert(["Bo Lind sells bread to Vexholm."], ids=["b"])
        state = journal.registered(chunks_file)
        assert (state.rewrites, state.appends) == (1, 0) if unflushed else (state.rewrites == 0 and state.appends > 0)
        live = dict(second.text_chunks._data)
        read = load_json(chunks_file)  # base + journal, as the next process reads it
        assert read == live and ("orphan" in read) == unflushed
        await second.finalize_storages()

    asyncio.run(run())


def test_a_value_json_cannot_hold_makes_the_flush_a_whole_sanitising_rewrite(registered):
    state = registered("kv.json")
    assert kv_write({"a": {"v": "x"}}, state.file_name) is False  # first flush: whole
    journal.touch(state.file_name, ["b"])  # as JsonKVStorage.upsert notes it
    assert kv_write({"a": {"v": "x"}, "b": {"v": "y"}}, state.file_name) is False  # appended
    assert state.appends == 1
    # LightRAG's writer drops the lone surrogate and asks the caller to reload (True), as without journals
    journal.touch(state.file_name, ["b"])
    assert kv_write({"a": {"v": "x"}, "b": {"v": "bad\ud800"}}, state.file_name) is True
    assert load_json(state.file_name) == {"a": {"v": "x"}, "b": {"v": "bad"}}
    assert not os.path.exists(journal.journal_path(state.file_name))


def test_a_stores_sanitising_flush_reloads_the_shared_dict_and_notes_the_file(registered, tmp_path):
    """PrismJsonKVStorage's flush of a value JSON cannot hold: LightRAG's writer cleans it, the shared dict takes the
    cleaned file, and the next flush appends again (the file is noted as saved)."""
    async def run():
        storage = kv_storage(tmp_path, "text_chunks", "san")
        state = registered("san/kv_store_text_chunks.json")
        await storage.initialize()
        await storage.upsert({"a": {"content": "fine"}})
        await storage.index_done_callback()
        await storage.upsert({"b": {"content": "bad\ud800"}})
        await storage.index_done_callback()
        assert storage._data["b"]["content"] == "bad" and load_json(state.file_name) == dict(storage._data)
        appends = state.appends
        await storage.upsert({"c": {"content": "more"}})
        await storage.index_done_callback()
        assert state.appends == appends + 1 and load_json(state.file_name) == dict(storage._data)

    asyncio.run(run())
