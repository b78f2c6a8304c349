"""Adaptive entity types end to end: discovery through the scripted server, persistence, reuse in extraction."""

from __future__ import annotations

import json

import pytest
from lightrag.prompt import PROMPTS

from lightrag_prism.insert.entity_types.discovery import STATE_DOCUMENT, guidance_types
from lightrag_prism.plugin_state import plugin_state
from tests.insert._rag import FreshLoop, make_offline_rag, make_rag, reopen, user_prompts

TYPE_MARKER = "You are designing the entity types"
DOCS = ["Apple Q3 2024 earnings call: iPhone revenue 39.3 billion USD, EPS 1.40, operating margin 31 percent.",
        "Microsoft Azure grew 29 percent; EPS 3.30; operating margin 47 percent."]
ANSWER = {"entity_types": [
    {"name": "FinancialMetric", "explanation": "A reported financial measure such as EPS or operating margin."},
    {"name": "Person", "explanation": "duplicate of a base type: must not be added twice"},
    {"name": "bad(type)/x", "explanation": "punctuation is cleaned"},
]}


def _base_names() -> set[str]:
    return {n.lower() for n in guidance_types(PROMPTS["default_entity_types_guidance"])}


@pytest.mark.asyncio
async def test_discovered_types_extend_base_types_and_reach_extraction(scripted_server, tmp_path):
    scripted_server.script(TYPE_MARKER, json.dumps(ANSWER))
    rag = await make_rag(scripted_server, tmp_path)
    result = await rag.aentity_type_aug(texts=DOCS)
    assert result["fallback"] is None and result["analysed"] == 2
    assert result["added_types"] == ["FinancialMetric", "BadTypeX"]
    names = {n.lower() for n in result["entity_types"]}
    assert _base_names() <= names and "financialmetric" in names
    assert rag.addon_params["entity_types_guidance"].count("- Person:") == 1
    stored = await plugin_state(rag).document(STATE_DOCUMENT).load(None)
    assert "FinancialMetric" in stored["guidance"]
    assert "FinancialMetric" in (tmp_path / rag.workspace / "kv_store_prism_state.json").read_text()  # flushed
    await rag.ainsert("Tim Cook discussed EPS at Apple.")
    extraction = user_prompts(scripted_server, "---Input Text---")
    assert extraction and "- FinancialMetric: A reported financial measure" in extraction[-1]
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_types_reload_in_new_instance_and_analysed_texts_are_skipped(scripted_server, tmp_path):
    scripted_server.script(TYPE_MARKER, json.dumps(ANSWER))
    rag = await make_rag(scripted_server, tmp_path)
    await rag.aentity_type_aug(texts=DOCS)
    asked = len(user_prompts(scripted_server, TYPE_MARKER))
    again = await reopen(rag, scripted_server)
    assert "- FinancialMetric:" in again.addon_params["entity_types_guidance"]
    skipped = await again.aentity_type_aug(texts=DOCS)
    assert skipped["skipped"] == 2 and skipped["analysed"] == 0
    assert len(user_prompts(scripted_server, TYPE_MARKER)) == asked
    refreshed = await again.aentity_type_aug(texts=DOCS, force_refresh=True)
    assert refreshed["analysed"] == 2  # re-analysed (answers come from LightRAG's LLM cache: same prompts)
    assert refreshed["entity_types"].count("FinancialMetric") == 1
    await again.finalize_storages()


@pytest.mark.asyncio
async def test_long_texts_are_sampled_and_folders_read(scripted_server, tmp_path):
    scripted_server.script(TYPE_MARKER, json.dumps(ANSWER))
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "a.txt").write_text("EPS rose. " * 5000)  # ~15k tokens: 13 windows, 3 sampled
    (folder / "b.md").write_text(DOCS[1])
    (folder / "c.pdf").write_text("ignored")
    rag = await make_rag(scripted_server, tmp_path / "wd", entity_type_samples_per_text=3)
    result = await rag.aentity_type_aug(input_folder=str(folder))
    assert result["analysed"] == 2
    assert len(user_prompts(scripted_server, TYPE_MARKER)) == 3 + 1
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_garbage_answers_add_nothing(scripted_server, tmp_path):
    scripted_server.garbage(TYPE_MARKER)
    rag = await make_rag(scripted_server, tmp_path)
    result = await rag.aentity_type_aug(texts=DOCS)
    assert result["added_types"] == [] and result["unparsed_answers"] == 2
    assert {n.lower() for n in result["entity_types"]} == _base_names()
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_without_llm_base_types_are_kept(scripted_server, tmp_path):
    rag = await make_offline_rag(scripted_server, tmp_path)
    result = await rag.aentity_type_aug(texts=DOCS)
    assert result["fallback"].startswith("no LLM configured")
    assert result["added_types"] == [] and scripted_server.chat_requests() == []
    assert rag.addon_params["entity_types_guidance"].strip() == PROMPTS["default_entity_types_guidance"].strip()
    with pytest.raises(ValueError, match="texts"):
        await rag.aentity_type_aug()
    await rag.finalize_storages()


def test_sync_entity_type_aug(scripted_server, tmp_path):
    scripted_server.script(TYPE_MARKER, json.dumps(ANSWER))
    with FreshLoop() as loop:
        rag = loop.run_until_complete(make_rag(scripted_server, tmp_path))
        result = rag.entity_type_aug(texts=DOCS)
        assert "FinancialMetric" in result["added_types"]
        loop.run_until_complete(rag.finalize_storages())
