"""Timestamps end to end: ainsert(timestamps=...) through the scripted OpenAI-compatible server."""

from __future__ import annotations

import re

import pytest
from lightrag.utils import compute_mdhash_id

from lightrag_prism import QueryParam
from lightrag_prism.insert.summaries import SUMMARY_STATS
from lightrag_prism.insert.timestamps.markers import TIMESTAMP_SUMMARY_INSTRUCTION
from tests.insert._rag import FreshLoop, make_rag, node_descriptions, user_prompts

DOC_Q3 = "Apple reported iPhone revenue of 39 billion dollars. Tim Cook praised Foxconn."
DOC_Q2 = "Apple reported iPhone revenue of 45 billion dollars. Tim Cook visited Foxconn."
SUMMARY_MARKER = "synthesize a list of descriptions"


@pytest.mark.asyncio
async def test_descriptions_prefixed_and_chronological_across_inserts(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert(DOC_Q3, timestamps=["2024-Q3"], file_paths=["q3.txt"])
    await rag.ainsert([DOC_Q2], timestamps=["2024-Q2"], file_paths=["q2.txt"])  # older doc inserted later
    desc = await node_descriptions(rag)
    fragments = desc["Apple"].split("<SEP>")
    assert fragments == ["[Time: 2024-Q2] Apple reported iPhone revenue of 45 billion dollars.",
                         "[Time: 2024-Q3] Apple reported iPhone revenue of 39 billion dollars."]
    for text in desc.values():  # every description is dated, never twice
        assert all(f.startswith("[Time: 2024-Q") for f in text.split("<SEP>"))
        assert "] [Time:" not in text
    assert "Time" not in desc  # the chunk's time header is not shown to the extractor
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_chunks_keep_their_timestamp_in_query_context(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path)
    await rag.ainsert([DOC_Q3, DOC_Q2], timestamps=["2024-Q3", "2024-Q2"], ids=["doc-q3", "doc-q2"])
    chunk = await rag.text_chunks.get_by_id("doc-q3-chunk-000")
    assert chunk["content"].startswith("[Time: 2024-Q3]\n") and chunk["prism_timestamp"] == "2024-Q3"
    data = await rag.aquery_data("Apple iPhone revenue", QueryParam(mode="hybrid", enable_rerank=False))
    contents = [c["content"] for c in data["data"]["chunks"]]
    assert any(c.startswith("[Time: 2024-Q2]") for c in contents)
    assert any(c.startswith("[Time: 2024-Q3]") for c in contents)
    context = await rag.aquery(
        "Apple iPhone revenue", QueryParam(mode="naive", only_need_context=True, enable_rerank=False))
    assert "[Time: 2024-Q3]" in context
    await rag.finalize_storages()


@pytest.mark.asyncio
@pytest.mark.parametrize("bad", [["2024-Q1"], ["2024-Q1", "2024-Q2", "2024-Q3"], ["2024-Q1", ""], "2024-Q1"])
async def test_wrong_timestamps_raise_before_anything_is_written(scripted_server, tmp_path, bad):
    rag = await make_rag(scripted_server, tmp_path)
    with pytest.raises(ValueError, match="timestamp"):
        await rag.ainsert([DOC_Q3, DOC_Q2], timestamps=bad)
    assert scripted_server.requests == []
    for doc in (DOC_Q3, DOC_Q2):
        doc_id = compute_mdhash_id(doc, prefix="doc-")
        assert await rag.full_docs.get_by_id(doc_id) is None
        assert await rag.doc_status.get_by_id(doc_id) is None
    assert await rag.chunk_entity_relation_graph.get_all_labels() == []
    await rag.finalize_storages()


def _summary_rule(drop_markers: bool):
    def reply(body):
        text = "\n".join(m.get("content", "") for m in body["messages"] if isinstance(m.get("content"), str))
        stamps = list(dict.fromkeys(re.findall(r"\[Time: [^\]]+\]", text.split("Description List:")[-1])))
        if drop_markers:
            return "Apple sold many iPhones across several quarters."
        return " ".join(f"{s} Apple sold iPhones." for s in stamps)
    return reply


@pytest.mark.asyncio
@pytest.mark.parametrize("drop_markers", [False, True])
async def test_llm_summary_keeps_timestamps_or_falls_back(scripted_server, tmp_path, drop_markers):
    scripted_server.script(SUMMARY_MARKER, _summary_rule(drop_markers))
    rag = await make_rag(scripted_server, tmp_path, force_llm_summary_on_merge=2)
    before = dict(SUMMARY_STATS)
    await rag.ainsert(DOC_Q3, timestamps=["2024-Q3"])
    await rag.ainsert(DOC_Q2, timestamps=["2024-Q2"])
    prompts = user_prompts(scripted_server, SUMMARY_MARKER)
    assert prompts and all(TIMESTAMP_SUMMARY_INSTRUCTION.strip() in p for p in prompts)
    apple = (await node_descriptions(rag))["Apple"]
    assert "[Time: 2024-Q2]" in apple and "[Time: 2024-Q3]" in apple
    assert apple.index("[Time: 2024-Q2]") < apple.index("[Time: 2024-Q3]")
    key = "llm_fallback" if drop_markers else "llm_verified"
    assert SUMMARY_STATS[key] > before.get(key, 0)
    if drop_markers:
        assert "several quarters" not in apple  # the marker-dropping summary was discarded
    await rag.finalize_storages()


def test_sync_insert_with_timestamps(scripted_server, tmp_path):
    with FreshLoop() as loop:
        rag = loop.run_until_complete(make_rag(scripted_server, tmp_path))
        rag.insert([DOC_Q3], timestamps=["2024-Q3"], file_paths=["q3.txt"])
        desc = loop.run_until_complete(node_descriptions(rag))
        assert desc["Apple"].startswith("[Time: 2024-Q3] ")
        loop.run_until_complete(rag.finalize_storages())


@pytest.mark.asyncio
async def test_a_document_processed_by_a_new_instance_keeps_its_timestamp(scripted_server, tmp_path):
    from lightrag_prism.insert.api import save_doc_timestamps
    from lightrag_prism.insert.pipeline import content_key
    from tests.insert._rag import reopen

    rag = await make_rag(scripted_server, tmp_path)
    await save_doc_timestamps(rag, {content_key(DOC_Q3): "2024-Q3"})  # what ainsert records first
    await rag.apipeline_enqueue_documents([DOC_Q3], ids=["doc-q3"])  # "crash" before processing
    again = await reopen(rag, scripted_server)
    await again.apipeline_process_enqueue_documents()
    assert (await node_descriptions(again))["Apple"].startswith("[Time: 2024-Q3] ")
    assert (await again.text_chunks.get_by_id("doc-q3-chunk-000"))["content"].startswith("[Time: 2024-Q3]\n")
    await again.finalize_storages()
