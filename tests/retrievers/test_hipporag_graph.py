"""The hipporag graph view: node/edge counts, synonym edges (no duplicates, incremental), passages, indexes."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from lightrag_prism import PrismRAG
from lightrag_prism.graph import knn
from lightrag_prism.plugin_state import plugin_state
from lightrag_prism.retrievers.views.facts import fact_view, orient, predicate_of, snapshot_facts
from lightrag_prism.retrievers.views import passage_graph as hippo_graph
from lightrag_prism.retrievers.views.passage_graph import (SynonymState, hippo_state, hipporag_graph, synonym_eligible,
                                                           variant_key)
from lightrag_prism.snapshot import patch_snapshot
from lightrag_prism.retrievers.views.index import EmbeddingIndex
from tests.helpers import offline_tokenizer
from tests.retrievers._hippo import HashEmbedder, fake_rag, snapshot_of
from tests.retrievers._kg import hash_embedding_func
from tests.scripted_server import hashed_bow

ENTITIES = {"Thomas C. Südhof": ["c1"], "Thomas Südhof": ["c2"], "東京": ["c1", "c3"], "Stanford": ["c2"],
            "x": ["c3"]}
RELATIONS = [("Thomas C. Südhof", "Stanford", "works at", 2.0, ["c1"]),
             ("Thomas Südhof", "Stanford", "professor at", 1.0, ["c2"]),
             ("東京", "Stanford", "partner of", 1.0, ["c3"])]
CHUNKS = {"c1": "Thomas C. Südhof visited 東京.", "c2": "Thomas Südhof teaches at Stanford.",
          "c3": "東京 is a city. x marks it.", "c4": "An unrelated passage no entity points to."}


@pytest.fixture
def rag(tmp_path):
    return fake_rag(tmp_path, CHUNKS, docs={"doc-1": ["c3", "c4"]})


@pytest.fixture
def knn_calls(monkeypatch):
    calls = []
    original = knn.topk_cosine

    def counting(queries, corpus, *args, **kwargs):
        calls.append(len(queries))
        return original(queries, corpus, *args, **kwargs)

    monkeypatch.setattr(knn, "topk_cosine", counting)
    return calls


@pytest.mark.asyncio
async def test_toy_graph_nodes_and_edges(rag, knn_calls):
    snapshot = snapshot_of(ENTITIES, RELATIONS)
    view = await hipporag_graph(rag, snapshot)
    assert view.n_entities == 5
    assert view.passage_ids == ["c1", "c2", "c3", "c4"]  # graph chunks, then the doc-status-only chunk
    assert view.adj.shape == (9, 9)
    assert (view.adj != view.adj.T).nnz == 0
    # 3 fact edges + 1 synonym edge + 6 passage-entity edges, each stored twice
    assert view.adj.nnz == 2 * (3 + 1 + 6)
    assert view.n_synonym_edges == 1
    idx = snapshot.node_index
    a, b = idx["Thomas C. Südhof"], idx["Thomas Südhof"]
    expected = float(hashed_bow("Thomas C. Südhof", 256) @ hashed_bow("Thomas Südhof", 256))
    assert expected >= 0.8
    assert view.adj[a, b] == pytest.approx(expected)  # stored once, not doubled
    assert view.adj[idx["Thomas C. Südhof"], idx["Stanford"]] == 2.0  # co-occurrence weight
    assert view.adj[idx["東京"], 5 + 2] == 1.0  # 東京 -> c3 incidence
    num_chunks = dict(zip(snapshot.node_ids, view.entity_num_chunks.tolist()))
    assert num_chunks == {name: len(chunks) for name, chunks in ENTITIES.items()}
    assert view.passage_data[3]["content"] == CHUNKS["c4"]
    assert knn_calls == [4]  # the eligible entities ("x" is too short) query the kNN once
    assert await hipporag_graph(rag, snapshot) is view  # cached per snapshot


@pytest.mark.asyncio
async def test_synonyms_incremental_only_for_new_entities(rag, knn_calls):
    await hipporag_graph(rag, snapshot_of(ENTITIES, RELATIONS, version=0))
    embedded_before = len(rag.embedding_func.texts)
    grown = {**ENTITIES, "Thomas Christian Südhof": ["c4"]}
    view = await hipporag_graph(rag, snapshot_of(grown, RELATIONS, version=1))
    state = hippo_state(rag)
    assert knn_calls == [4, 1]  # only the new entity queried the kNN, against all entities
    assert state.synonyms.knn_queries == 5
    new_name_texts = [t for t in rag.embedding_func.texts[embedded_before:] if t in grown]
    assert new_name_texts == ["Thomas Christian Südhof"]
    pairs = state.synonyms.pairs
    assert ("Thomas C. Südhof", "Thomas Südhof") in pairs
    assert all(a < b for a, b in pairs)  # canonical (min, max) keys: no duplicated edge
    assert any("Thomas Christian Südhof" in p for p in pairs)
    assert view.n_synonym_edges == len(pairs)
    shrunk = {k: v for k, v in grown.items() if k != "Thomas Südhof"}
    relations = [r for r in RELATIONS if "Thomas Südhof" not in r[:2]]
    view = await hipporag_graph(rag, snapshot_of(shrunk, relations, version=2))
    assert knn_calls == [4, 1]  # nothing new: no kNN call at all
    assert all("Thomas Südhof" not in p for p in state.synonyms.pairs)
    assert view.n_synonym_edges == len(state.synonyms.pairs)


@pytest.mark.asyncio
async def test_synonym_edges_are_carried_by_node_moves_only_when_pairs_were_only_dropped(rag, monkeypatch):
    built = []
    original = hippo_graph.synonym_adjacency
    monkeypatch.setattr(hippo_graph, "synonym_adjacency", lambda *a: built.append(1) or original(*a))

    def same_as_fresh(view, snapshot) -> None:
        expected = original(snapshot, hippo_state(rag).synonyms.pairs)
        assert view.synonyms.shape == expected.shape and (view.synonyms != expected).nnz == 0

    entities = {**ENTITIES, "Stanford University Medical Center": ["c2"], "Stanford University Medical": ["c4"]}
    base = snapshot_of(entities, RELATIONS, version=0)
    same_as_fresh(await hipporag_graph(rag, base), base)
    assert len(built) == 1 and base.derived["hipporag_graph"].synonyms.nnz == 4  # Südhof and Medical pairs
    school = "Stanford University Medical School"
    steps = [({"Thomas Südhof": None}, 1), ({"x": None}, 1),  # only drops: carried
             ({school: {"entity_id": school, "description": "d", "source_id": "c2"}}, 2),  # a new pair: built
             ({"Stanford University Medical": None}, 2)]  # drops both of its pairs: carried
    pairs = []
    for version, (nodes, builds) in enumerate(steps, start=1):
        snapshot = patch_snapshot(base, nodes, {}, version)
        view = await hipporag_graph(rag, snapshot, base)
        same_as_fresh(view, snapshot)
        assert len(built) == builds, nodes
        pairs.append(view.synonyms.nnz // 2)
        base = snapshot
    assert pairs == [1, 1, 2, 0]  # the Medical pair stays, School pairs with Medical, both go with Medical
    # A view of another snapshot in between, which has the name the next patch brings back: that patch adds no pair
    # to the state, yet its pairs are not in the base view's edges. Built, not carried.
    medical = "Stanford University Medical"
    await hipporag_graph(rag, snapshot_of({**{name: ["c2"] for name in base.node_ids}, medical: ["c4"]}, [], 9))
    snapshot = patch_snapshot(base, {medical: {"entity_id": medical, "description": "d", "source_id": "c4"}}, {}, 10)
    view = await hipporag_graph(rag, snapshot, base)
    same_as_fresh(view, snapshot)
    assert len(built) == 4 and view.synonyms.nnz == 4


def test_synonym_updates_through_random_changes_equal_a_fresh_state():
    """Names come, go and come back; the carried pairs always equal one update of a fresh state (and those of a
    state told which names went and came), and only names not seen in the last update query the kNN."""
    rng = np.random.default_rng(7)
    pool = [f"name {i:03d}" for i in range(120)] + ["ab", "x", "東京"]  # two too short for synonyms
    pool += ["The name 000", "name 001 function", "NAME 002"]  # variants of names in the pool
    base = rng.normal(size=(len(pool) // 3 + 1, 16))
    vectors = {}
    for i, name in enumerate(pool):  # groups of three near copies, so pairs above 0.8 exist
        v = base[i // 3] + 0.25 * rng.normal(size=16)
        vectors[name] = v / np.linalg.norm(v)
    state, told, previous, most_pairs = SynonymState(), SynonymState(), set(), 0
    for step in range(40):
        names = sorted(rng.choice(pool, size=int(rng.integers(10, len(pool))), replace=False).tolist())
        before = state.knn_queries
        state.update(names, np.array([vectors[n] for n in names]))
        told.update(names, np.array([vectors[n] for n in names]),  # told what went and came, as snapshot moves do
                    (sorted(previous - set(names)), sorted(set(names) - previous)))
        assert told.pairs == state.pairs and told.seen == state.seen and told.eligible == state.eligible
        fresh = SynonymState()
        fresh.update(names, np.array([vectors[n] for n in names]))
        assert state.pairs.keys() == fresh.pairs.keys(), step
        assert all(abs(state.pairs[p] - fresh.pairs[p]) < 1e-6 for p in fresh.pairs)
        assert state.seen == set(names) and state.eligible == {n for n in names if synonym_eligible(n)}
        assert state.knn_queries - before == len({n for n in names if synonym_eligible(n)} - previous)
        previous, most_pairs = set(names), max(most_pairs, len(fresh.pairs))
        assert all(fresh.pairs[p] == 1.0 for p in [("NAME 002", "name 002"), ("The name 000", "name 000")]
                   if p in fresh.pairs)
    assert most_pairs > 10


def test_name_variants_are_one_key_and_synonyms_of_weight_one():
    same = [("Response", "Response object", "pkg.client.Response", "the Response"),
            ("The Old Ropeworks", "Old Ropeworks"), ("--data-checksums", "data-checksums"),
            ("make_widget()", "make_widget"), ("FooError exceptions", "FooError")]
    for names in same:
        assert len({variant_key(n) for n in names}) == 1, names
    # a file name keeps its suffix; proper names ending in a kind-like word and short or empty keys stay apart
    assert variant_key("postgresql.conf") == "postgresql.conf" and variant_key("Apollo program") != "apollo"
    assert variant_key("U.S.") == "" and variant_key("options") == "" and variant_key("x.y") == ""
    state = SynonymState()
    names = ["Response", "Response object", "Request"]
    state.update(names, np.eye(3))  # orthogonal name vectors: no pair by the kNN
    assert state.pairs == {("Response", "Response object"): 1.0}
    state.update(names[1:] + ["pkg.client.Response"], np.eye(3))
    assert state.pairs == {("Response object", "pkg.client.Response"): 1.0}


def test_synonym_eligibility_is_unicode_aware():
    assert synonym_eligible("Südhof") and synonym_eligible("東京") and synonym_eligible("Ünö")
    assert not synonym_eligible("x") and not synonym_eligible("a.b") and not synonym_eligible("東")


async def _vector_store(working_dir):
    """The vector namespace of a real instance (JSON KV storage in ``working_dir``)."""
    # LightRAG's JSON storages share data per workspace across a process: one workspace per test
    rag = PrismRAG(working_dir=str(working_dir), workspace=f"v_{uuid.uuid4().hex[:10]}", embedding_func=hash_embedding_func(),
                   tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    return rag, plugin_state(rag).vectors


@pytest.mark.asyncio
async def test_embedding_index_persists_and_embeds_only_new(tmp_path):
    embed = HashEmbedder()
    rag, store = await _vector_store(tmp_path)
    try:
        index = EmbeddingIndex("idx", store)
        first = (await index.sync(["a", "b"], ["alpha", "beta"], embed)).vectors()
        assert embed.texts == ["alpha", "beta"]
        reloaded = EmbeddingIndex("idx", store)  # a second instance, or the same one restarted
        again = (await reloaded.sync(["b", "a"], ["beta", "alpha"], embed)).vectors()
        assert embed.texts == ["alpha", "beta"] and reloaded.loaded_total == 2  # nothing re-embedded
        np.testing.assert_array_equal(again, first[::-1])  # exact float32 round trip
        await reloaded.sync(["b", "c"], ["beta", "gamma"], embed)
        assert embed.texts[-1:] == ["gamma"] and len(embed.texts) == 3
        assert sorted(await store.get("idx", ["a", "b", "c"])) == ["b", "c"]  # "a" dropped from the store too
        assert await store.get("other", ["b"]) == {}  # indexes do not share vectors
    finally:
        await rag.finalize_storages()


class AskedTexts(list):
    """Texts that count how many of them were asked for (a sync makes only the ones it embeds)."""

    asked = 0

    def __getitem__(self, i):
        self.asked += 1
        return super().__getitem__(i)


@pytest.mark.asyncio
@pytest.mark.parametrize("column_major", [False, True])
async def test_embedding_index_sync_holds_exactly_the_wanted_ids_through_random_changes(column_major):
    """Ids added, dropped, reordered and repeated at random: each sync returns every id's own vector in the order
    asked, holds each wanted id once and nothing else, and embeds an id only when it was not held. In either
    layout, which survives appends, growth and compaction."""
    import random

    rng = random.Random(7)
    embed = HashEmbedder()
    index = EmbeddingIndex("idx", None, column_major=column_major)
    universe = [f"id{i}" for i in range(40)]
    earlier, moved_nothing = [], 0
    for step in range(60):
        # mostly small changes (rows stay put), sometimes large ones (dead rows pile up and are compacted)
        if step % 7 and index.ids:
            ids = [v for v in index.ids if rng.random() > 0.1] + rng.sample(universe, rng.randint(0, 3))
        else:
            ids = rng.sample(universe, rng.randint(0, 25))
        ids += rng.sample(ids, min(len(ids), rng.randint(0, 3)))  # repeats
        rng.shuffle(ids)
        held_before, embedded_before = set(index.ids), len(embed.texts)
        rows_before = {v: index._row[v] for v in held_before}
        compactions_before = index.compactions
        texts = AskedTexts([f"text of {v}" for v in ids])
        result = await index.sync(ids, texts, embed)
        rows = result.vectors()
        assert sorted(index.ids) == sorted(set(ids)) and len(index.ids) == len(set(ids))
        assert len(embed.texts) - embedded_before == len(set(ids) - held_before) == texts.asked  # no other text made
        if index.compactions == compactions_before:  # a kept id stays on its row
            assert all(index._row[v] == rows_before[v] for v in set(ids) & held_before)
            moved_nothing += bool(set(ids) & held_before)
        if ids:
            expected = np.asarray(await HashEmbedder()([f"text of {v}" for v in ids]))
            expected /= np.linalg.norm(expected, axis=1, keepdims=True)
            np.testing.assert_allclose(rows, expected, atol=1e-6)
            np.testing.assert_allclose(result.scores(expected[0]), expected @ expected[0], atol=1e-5)
            earlier.append((result, expected))
        else:
            assert rows.shape[0] == 0
        for old, old_expected in earlier:  # what older syncs returned still reads the same vectors
            np.testing.assert_allclose(old.vectors(), old_expected, atol=1e-6)
        assert index.matrix.shape[0] - len(index.ids) <= index.matrix.shape[0] // 8  # dead rows stay a few
        if index.matrix.shape[0] > 1:
            assert (index.matrix.strides[0] < index.matrix.strides[1]) == column_major
    assert index.compactions > 3 and moved_nothing > 10  # both paths ran


@pytest.mark.asyncio
async def test_a_sync_carrying_the_previous_rows_equals_one_that_looks_each_id_up():
    """Two indexes given the same random syncs, one told where each id was in its previous sync (some ids left to
    look up, stale or repeated ids now and then): both hold the same ids on the same rows and return the same
    vectors; the carried path runs unless the ids repeat or the previous rows are not the latest."""
    import random

    rng = random.Random(3)
    embed = HashEmbedder()
    looked, carried = EmbeddingIndex("a", None), EmbeddingIndex("b", None)
    located = []
    original = carried._locate_carried
    carried._locate_carried = lambda *args: located.append(original(*args)) or located[-1]
    universe = [f"id{i}" for i in range(60)]
    latest, latest_ids, stale = None, [], None
    for step in range(80):
        if latest_ids and step % 6:
            ids = [v for v in latest_ids if rng.random() > 0.15] + rng.sample(universe, rng.randint(0, 4))
            ids = list(dict.fromkeys(ids))
        else:
            ids = rng.sample(universe, rng.randint(0, 40))
        if step % 13 == 5:
            ids += ids[:2]  # repeats
        rng.shuffle(ids)
        at = {v: i for i, v in enumerate(latest_ids)}
        sources = np.array([at.get(v, -1) if rng.random() > 0.2 else -1 for v in ids], dtype=np.int64)
        previous = stale if step % 17 == 9 else latest
        texts = [f"text of {v}" for v in ids]
        expected = await looked.sync(ids, texts, embed)
        result = await carried.sync(ids, texts, embed, (previous, sources) if previous is not None else None)
        np.testing.assert_array_equal(result.vectors(), expected.vectors())
        assert carried._row == looked._row and carried.ids == looked.ids
        stale, latest, latest_ids = latest, result, ids
    used = sum(rows is not None for rows in located)
    assert used > 40 and used < len(located)  # both paths ran


@pytest.mark.asyncio
async def test_staged_vectors_replace_embedding_and_are_then_forgotten(tmp_path):
    embed = HashEmbedder()
    rag, store = await _vector_store(tmp_path)
    try:
        index = EmbeddingIndex("idx", store)
        staged = np.asarray(await HashEmbedder()(["alpha", "unused"]))
        index.stage(["a", "u"], staged * 3.0)  # staged rows are normalised
        assert index.has("a") and not index.has("b")
        rows = (await index.sync(["a", "b"], ["alpha", "beta"], embed)).vectors()
        assert embed.texts == ["beta"]  # "a" came from the stage
        np.testing.assert_allclose(rows[0], staged[0], atol=1e-6)
        assert not index.has("u")  # a staged id the sync did not want is dropped
        assert sorted(await store.get("idx", ["a", "b", "u"])) == ["a", "b"]
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_fact_view_and_incremental_fact_index(rag):
    snapshot = snapshot_of(ENTITIES, RELATIONS)
    facts = snapshot_facts(snapshot)
    assert ("Thomas C. Südhof", "works at", "Stanford") in facts
    view = await fact_view(rag, snapshot)
    assert view.vectors.shape == (3, 256)
    before = len(rag.embedding_func.texts)
    more = RELATIONS + [("東京", "Thomas Südhof", "visited by", 1.0, ["c1"])]
    await fact_view(rag, snapshot_of(ENTITIES, more, version=1))
    assert rag.embedding_func.texts[before:] == ["東京 visited by Thomas Südhof"]


def test_orient_reads_the_subject_from_the_description():
    edge = {"description": "Journal X first published in 1963.<SEP>1963: Journal X appeared"}
    assert orient("1963", "Journal X", edge) == ("Journal X", "1963")  # stored sorted, read as written
    assert orient("Journal X", "1963", edge) == ("Journal X", "1963")
    assert orient("a", "b", {"description": "b"}) == ("b", "a")  # only the target is named
    assert orient("a", "b", {"description": "unrelated words"}) == ("a", "b")  # no evidence: stored order
    assert orient("a", "b", {}) == ("a", "b")


def test_predicate_falls_back_to_description():
    assert predicate_of({"keywords": "a<SEP>b"}) == "a, b"
    assert predicate_of({"keywords": "", "description": "born in<SEP>x"}) == "born in"
    assert predicate_of({}) == "related to"


@pytest.mark.asyncio
async def test_empty_graph_view(tmp_path):
    rag = fake_rag(tmp_path, {"c9": "only a passage"}, docs={"doc": ["c9"]})
    view = await hipporag_graph(rag, snapshot_of({}, []))
    assert view.n_entities == 0 and view.passage_ids == ["c9"] and view.adj.shape == (1, 1)
    assert (await fact_view(rag, snapshot_of({}, []))).facts == []


@pytest.mark.asyncio
async def test_the_head_never_takes_a_passage_whose_text_is_gone(tmp_path):
    """c2 is referenced by the graph but text_chunks no longer holds it: it is no head passage, even when the head
    would pick it as the most novel of the pool, and the dense order is followed around it."""
    rag = fake_rag(tmp_path, {k: v for k, v in CHUNKS.items() if k != "c2"}, docs={"doc-1": ["c3", "c4"]})
    view = await hipporag_graph(rag, snapshot_of(ENTITIES, RELATIONS))
    assert view.passage_ids[:3] == ["c1", "c2", "c3"] and not view.passage_valid[1]
    dense = np.array([0.9, 0.8, 0.7, 0.1])
    head = view.head_rows(dense, 3, 100.0)  # a huge novelty: the least similar passage of the pool comes next
    assert 1 not in head.tolist() and head[0] == 0 and len(head) == 3
    assert view.head_rows(dense, 2, 0.0).tolist() == [0, 2]  # dense order, c2 skipped
