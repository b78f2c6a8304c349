"""Offline keywords, the no-LLM stand-in and the environment-configured endpoint."""

from __future__ import annotations

import json

import pytest

from lightrag_prism.backends import embedding_from_env, llm_from_env
from lightrag_prism.insert.offline_llm import offline_llm_complete
from lightrag_prism.errors import LLMNotConfiguredError
from lightrag_prism.keywords import extract_keywords


def test_keywords_separate_entities_from_themes():
    high, low = extract_keywords("Who was the first president of the association which published "
                                 "Journal of Psychotherapy Integration?")
    assert low[0] == "Journal of Psychotherapy Integration"
    assert "president" in high and "association" in high
    assert not {"who", "was", "the", "of"} & {w.lower() for w in high + low}


def test_keywords_keep_non_ascii_and_quoted_phrases():
    high, low = extract_keywords('Where did Thomas Südhof win the "Nobel Prize"?')
    assert "Thomas Südhof" in low and "Nobel Prize" in low


def test_keywords_of_a_stop_word_query_fall_back_to_the_query():
    assert extract_keywords("what is it") == (["what is it"], ["what is it"])


@pytest.mark.asyncio
async def test_stand_in_answers_lightrag_extraction_prompt_with_offline_rows():
    from lightrag.prompt import PROMPTS

    prompt = PROMPTS["entity_extraction_user_prompt"].format(
        max_total_records=40, max_entity_records=20, completion_delimiter="<|COMPLETE|>", language="English",
        heading_context_block="", input_text="Alice Smith works for Acme Corp. in Boston. Bob Jones met Alice Smith.")
    system = PROMPTS["entity_extraction_system_prompt"]
    rows = (await offline_llm_complete(prompt, system_prompt=system)).splitlines()
    assert rows[-1] == "<|COMPLETE|>"
    entities = [r.split("<|#|>") for r in rows if r.startswith("entity")]
    relations = [r.split("<|#|>") for r in rows if r.startswith("relation")]
    assert {e[1] for e in entities} >= {"Alice Smith", "Acme Corp.", "Bob Jones"}
    assert all(len(e) == 4 for e in entities) and all(len(r) == 5 for r in relations)
    assert ("Alice Smith", "Acme Corp.", "works for") in {(r[1], r[2], r[3]) for r in relations}
    assert ("Bob Jones", "Alice Smith", "met") in {(r[1], r[2], r[3]) for r in relations}


@pytest.mark.asyncio
async def test_offline_stand_in_answers_fallback_steps_and_refuses_answers():
    from lightrag.prompt import PROMPTS

    summary_prompt = PROMPTS["summarize_entity_descriptions"].format(
        description_type="Entity", description_name="X", summary_length=100, language="English",
        description_list="\n".join(json.dumps({"description": d}) for d in ["one fact", "two facts", "one fact"]))
    assert await offline_llm_complete(summary_prompt) == "one fact\ntwo facts"  # distinct fragments, in order
    keyword_prompt = PROMPTS["keywords_extraction"].format(query="Where is Acme Corp?", examples="",
                                                           language="English")
    answer = json.loads(await offline_llm_complete(keyword_prompt))
    assert "Acme Corp" in answer["low_level_keywords"]
    with pytest.raises(LLMNotConfiguredError, match="OPENAI_BASE_URL"):
        await offline_llm_complete("Answer the question using the context.")


@pytest.mark.asyncio
async def test_llm_from_env_talks_to_an_openai_compatible_endpoint(scripted_server):
    scripted_server.script("capital of France", "Paris.")
    env = {"PRISM_LLM_MODEL": "local-model", "OPENAI_BASE_URL": scripted_server.base_url, "OPENAI_API_KEY": "k"}
    llm = llm_from_env(env)
    assert await llm("What is the capital of France?", system_prompt="Be brief.") == "Paris."
    body = scripted_server.chat_requests()[-1].body
    assert body["model"] == "local-model" and body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert llm_from_env({}) is None


def test_embedding_from_env_requires_a_dimension():
    assert embedding_from_env({}) is None
    with pytest.raises(ValueError, match="PRISM_EMBEDDING_DIM"):
        embedding_from_env({"PRISM_EMBEDDING_MODEL": "nomic-embed-text"})
    func = embedding_from_env({"PRISM_EMBEDDING_MODEL": "nomic-embed-text", "PRISM_EMBEDDING_DIM": "768"})
    assert func.embedding_dim == 768
