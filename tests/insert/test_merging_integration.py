"""Agentic merging end to end through the scripted server: candidates, LLM decisions, clusters, consistency."""

from __future__ import annotations

import json
import re

import pytest

from lightrag_prism.insert.merging.agentic import PLANS_DOCUMENT, open_merge_state
from lightrag_prism.plugin_state import plugin_state
from tests.insert._rag import (
    FreshLoop, assert_graph_consistent, make_offline_rag, make_rag, node_descriptions, reopen, user_prompts)

JUDGE_MARKER = "You deduplicate entities"
D1 = "Acme Corp builds rockets in Texas with Bob Stone."
D2 = "Acme Corporation builds rockets in Texas with Bob Stone."
D3 = "Acme Corporation Inc builds rockets in Texas with Bob Stone."


def judge(same: set[frozenset], confidence: float = 0.99, canonical: str = "Acme Corporation"):
    def reply(body):
        text = body["messages"][-1]["content"]
        a = re.search(r"Entity A: (.+?) \(type", text).group(1)
        b = re.search(r"Entity B: (.+?) \(type", text).group(1)
        ok = frozenset((a, b)) in same
        return json.dumps({"merge": ok, "confidence": confidence if ok else 0.1, "canonical_name": canonical})
    return reply


ACME = {frozenset(("Acme Corp", "Acme Corporation")), frozenset(("Acme Corporation", "Acme Corporation Inc"))}


async def _edges(rag) -> dict[frozenset, dict]:
    return {frozenset((e["source"], e["target"])): e for e in await rag.chunk_entity_relation_graph.get_all_edges()}


@pytest.mark.asyncio
async def test_new_duplicate_is_merged_and_relations_kept(scripted_server, tmp_path):
    scripted_server.script(JUDGE_MARKER, judge(ACME))
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert(D1, ids=["d1"])
    await rag.ainsert(D2, ids=["d2"], agentic_merging=True, agentic_merging_threshold=0.5)
    report = rag.last_merge_report
    assert report["checked"] == 1  # only the entity this insert created
    assert [c["members"] for c in report["clusters"]] == [["Acme Corp", "Acme Corporation"]]
    labels = set(await rag.chunk_entity_relation_graph.get_all_labels())
    assert labels == {"Acme Corporation", "Bob Stone", "Texas"}
    edges = await _edges(rag)
    assert edges[frozenset(("Acme Corporation", "Texas"))]["source_id"].count("chunk") == 2
    desc = (await node_descriptions(rag))["Acme Corporation"]
    assert "Acme Corp builds" in desc and "Acme Corporation builds" in desc
    for row in await rag.full_entities.get_by_ids(["d1", "d2"]):
        assert "Acme Corp" not in row["entity_names"] and "Acme Corporation" in row["entity_names"]
    log, plans = await open_merge_state(rag)
    assert log.get("Acme Corp", "Acme Corporation").decision == "merge"
    assert log.pending() == [] and await plans.load() == {}
    assert await plugin_state(rag).document(PLANS_DOCUMENT).load(None) == {}  # written, then emptied
    await rag.finalize_storages()


async def _rag_with_a_heavier_acme_edge(server, tmp_path):
    """D1 and D2 inserted, the judge scripted to merge ACME, and "Acme Corp"-"Texas" weighted 5 (repeated evidence)."""
    server.script(JUDGE_MARKER, judge(ACME))
    rag = await make_rag(server, tmp_path)
    await rag.ainsert([D1, D2], ids=["d1", "d2"])
    graph = rag.chunk_entity_relation_graph
    edge = await graph.get_edge("Acme Corp", "Texas")
    await graph.upsert_edge("Acme Corp", "Texas", {**edge, "weight": 5.0})
    return rag


@pytest.mark.asyncio
async def test_parallel_edge_weights_are_summed(scripted_server, tmp_path):
    rag = await _rag_with_a_heavier_acme_edge(scripted_server, tmp_path)
    graph = rag.chunk_entity_relation_graph
    report = await rag.aagentic_merge(["Acme Corp"], threshold=0.5)
    assert report["clusters"] and report["clusters"][0]["weights_changed"] >= 1
    assert (await graph.get_edge("Acme Corporation", "Texas"))["weight"] == 6.0  # 5 + 1, LightRAG alone keeps 5
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_chains_merge_into_one_entity(scripted_server, tmp_path):
    scripted_server.script(JUDGE_MARKER, judge(ACME))
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert([D1, D2, D3], ids=["d1", "d2", "d3"])
    report = await rag.aagentic_merge(None, threshold=0.5)
    assert [c["members"] for c in report["clusters"]] == [["Acme Corp", "Acme Corporation", "Acme Corporation Inc"]]
    labels = set(await rag.chunk_entity_relation_graph.get_all_labels())
    assert labels == {"Acme Corporation", "Bob Stone", "Texas"}
    assert (await rag.chunk_entity_relation_graph.get_edge("Acme Corporation", "Texas"))["weight"] == 3.0
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_low_confidence_and_refused_pairs_are_not_merged_nor_asked_again(scripted_server, tmp_path):
    scripted_server.script(JUDGE_MARKER, judge(ACME, confidence=0.9))  # below the 0.95 default
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert([D1, D2], ids=["d1", "d2"])
    first = await rag.aagentic_merge(None, threshold=0.5)
    assert first["clusters"] == [] and first["judged"] > 0
    assert "Acme Corp" in await rag.chunk_entity_relation_graph.get_all_labels()
    asked = len(user_prompts(scripted_server, JUDGE_MARKER))
    again = await reopen(rag, scripted_server)
    second = await again.aagentic_merge(None, threshold=0.5)
    assert second["judged"] == 0 and second["skipped_refused"] == first["judged"]
    assert len(user_prompts(scripted_server, JUDGE_MARKER)) == asked
    await again.finalize_storages()


@pytest.mark.asyncio
@pytest.mark.parametrize("deleted", ["d1", "d2"])
async def test_delete_by_document_after_merge(scripted_server, tmp_path, deleted):
    scripted_server.script(JUDGE_MARKER, judge(ACME))
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert(D1, ids=["d1"], timestamps=["2024-Q1"])
    await rag.ainsert(D2, ids=["d2"], timestamps=["2024-Q2"], agentic_merging=True, agentic_merging_threshold=0.5)
    await rag.adelete_by_doc_id(deleted)
    await assert_graph_consistent(rag)
    kept = {"d1": "d2", "d2": "d1"}[deleted]
    labels = set(await rag.chunk_entity_relation_graph.get_all_labels())
    assert labels == {"Acme Corporation", "Bob Stone", "Texas"}
    for edge in (await _edges(rag)).values():
        assert edge["source_id"] == f"{kept}-chunk-000" and edge["weight"] == 1.0
    desc = (await node_descriptions(rag))["Acme Corporation"]
    assert desc == {"d1": "[Time: 2024-Q1] Acme Corp builds rockets in Texas with Bob Stone.",
                    "d2": "[Time: 2024-Q2] Acme Corporation builds rockets in Texas with Bob Stone."}[kept]
    await rag.adelete_by_doc_id(kept)
    assert await rag.chunk_entity_relation_graph.get_all_labels() == []
    await rag.finalize_storages()



@pytest.mark.asyncio
async def test_delete_reads_the_aliases_once_for_all_rebuilt_chunks(scripted_server, tmp_path, monkeypatch):
    from lightrag_prism.insert.merging import rebuild

    scripted_server.script(JUDGE_MARKER, judge(ACME))
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert(D1, ids=["d1"])
    for doc, doc_id in ((D2, "d2"), (D3, "d3")):
        await rag.ainsert(doc, ids=[doc_id], agentic_merging=True, agentic_merging_threshold=0.5)
    reads, hooked = [], []
    load, hook = rebuild.load_aliases, rag.prism_seam.rebuild
    monkeypatch.setattr(rebuild, "load_aliases", lambda state: reads.append(state) or load(state))

    async def counting_hook(storage, chunk_id, *args):
        hooked.append(chunk_id)
        return await hook(storage, chunk_id, *args)

    monkeypatch.setattr(rag.prism_seam, "rebuild", counting_hook)  # what LightRAG's rebuild step reaches
    await rag.adelete_by_doc_id("d1")
    assert len(set(hooked)) == 2 and len(reads) == 1  # two remaining chunks rebuilt, one read of the aliases
    assert set(await rag.chunk_entity_relation_graph.get_all_labels()) == {"Acme Corporation", "Bob Stone", "Texas"}
    await assert_graph_consistent(rag)
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_crash_mid_merge_is_rolled_forward_by_a_new_instance(scripted_server, tmp_path):
    rag = await _rag_with_a_heavier_acme_edge(scripted_server, tmp_path)

    def crash(point):
        if point == "after_amerge":
            raise RuntimeError("simulated crash")

    from lightrag_prism.insert.merging.agentic import agentic_merge
    with pytest.raises(RuntimeError, match="simulated crash"):
        await agentic_merge(rag, ["Acme Corp"], 0.5, crash_hook=crash)
    assert len((await open_merge_state(rag))[0].pending()) == 1
    row = await rag.full_entities.get_by_id("d1")
    assert "Acme Corp" in row["entity_names"]  # the crash left the per-document rows stale
    again = await reopen(rag, scripted_server)  # initialize_storages rolls the merge forward
    assert (await open_merge_state(again))[0].pending() == []
    assert "Acme Corp" not in (await again.full_entities.get_by_id("d1"))["entity_names"]
    assert (await again.chunk_entity_relation_graph.get_edge("Acme Corporation", "Texas"))["weight"] == 6.0
    await assert_graph_consistent(again)
    await again.adelete_by_doc_id("d1")
    await assert_graph_consistent(again)
    await again.finalize_storages()


@pytest.mark.asyncio
async def test_without_llm_nothing_is_merged(scripted_server, tmp_path):
    rag = await make_offline_rag(scripted_server, tmp_path)
    await rag.ainsert([D1, D2], ids=["d1", "d2"], agentic_merging=True)
    assert rag.last_merge_report["fallback"].startswith("no LLM configured")
    assert "Acme Corp" in await rag.chunk_entity_relation_graph.get_all_labels()
    with pytest.raises(ValueError, match="threshold"):
        await rag.ainsert(D3, agentic_merging=True, agentic_merging_threshold=1.5)
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_garbage_judgements_merge_nothing(scripted_server, tmp_path):
    scripted_server.garbage(JUDGE_MARKER)
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert([D1, D2], ids=["d1", "d2"])
    report = await rag.aagentic_merge(None, threshold=0.5)
    assert report["clusters"] == [] and report["unparsed"] == report["candidates"] > 0
    await rag.finalize_storages()


def test_sync_insert_with_agentic_merging_and_sync_merge(scripted_server, tmp_path):
    scripted_server.script(JUDGE_MARKER, judge(ACME))
    with FreshLoop() as loop:
        rag = loop.run_until_complete(make_rag(scripted_server, tmp_path))
        rag.insert(input=[D1], ids=["d1"])
        rag.insert(input=[D2], ids=["d2"], agentic_merging=True, agentic_merging_threshold=0.5)
        assert [c["canonical"] for c in rag.last_merge_report["clusters"]] == ["Acme Corporation"]
        rag.insert(input=[D3], ids=["d3"])
        report = rag.agentic_merge(["Acme Corporation Inc"], threshold=0.5)
        assert report["clusters"][0]["merged"] == ["Acme Corporation Inc"]
        labels = loop.run_until_complete(rag.chunk_entity_relation_graph.get_all_labels())
        assert sorted(labels) == ["Acme Corporation", "Bob Stone", "Texas"]
        loop.run_until_complete(rag.finalize_storages())
