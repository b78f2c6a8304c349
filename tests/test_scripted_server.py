"""Tests of the scripted OpenAI-compatible server, through LightRAG's own OpenAI client."""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request

import numpy as np
import openai
import pytest
import tenacity
from lightrag import LightRAG, QueryParam
from lightrag.llm.openai import openai_complete_if_cache

from tests.helpers import DUMMY_API_KEY, lightrag_kwargs, make_embedding_func, make_llm_func
from tests.scripted_responder import CANNED_PREFIX, COMPLETE, keywords_answer, lightrag_responder, summary_answer
from tests.scripted_server import GARBAGE, Rule, hashed_bow, stream_pieces

DOCS = [
    "Alice Smith works at Acme Corp in Berlin. Acme Corp builds robots for Nimbus Inc.",
    "Bob Jones is a friend of Alice Smith. Bob Jones lives in Paris.",
    "Carol White founded Nimbus Inc in Paris. Nimbus Inc buys robots from Acme Corp.",
]


def _raw_client(server) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key=DUMMY_API_KEY, max_retries=0)


# ---------------------------------------------------------------------------- plain HTTP
def test_models_endpoint_from_sync_code(scripted_server):
    with urllib.request.urlopen(f"{scripted_server.base_url}/models", timeout=5) as resp:
        payload = json.loads(resp.read())
    assert payload["data"][0]["id"] == "scripted"
    assert scripted_server.requests[-1].path == "/v1/models"


def test_hashed_bow_is_normalised_and_deterministic():
    a, b = hashed_bow("Alice met Bob", 64), hashed_bow("alice  met bob!", 64)
    assert a.shape == (64,) and np.isclose(np.linalg.norm(a), 1.0)
    assert np.array_equal(a, b)
    assert np.isclose(np.linalg.norm(hashed_bow("", 16)), 1.0)


def test_stream_pieces_concatenate_to_text():
    text = "one  two\nthree "
    assert "".join(stream_pieces(text)) == text


# ---------------------------------------------------------------------------- embeddings
@pytest.mark.asyncio
async def test_embeddings_float_and_base64_agree(scripted_server):
    client = _raw_client(scripted_server)
    as_b64 = await client.embeddings.create(model="m", input=["Alice met Bob", "x"])  # openai's default: base64
    as_float = await client.embeddings.create(model="m", input=["Alice met Bob", "x"], encoding_format="float")
    await client.close()
    formats = [r.body.get("encoding_format") for r in scripted_server.embedding_requests()]
    assert formats == ["base64", "float"]
    got_b64 = np.array([d.embedding for d in as_b64.data])
    got_float = np.array([d.embedding for d in as_float.data])
    assert got_b64.shape == (2, 64)
    assert np.allclose(got_b64, got_float)
    assert np.allclose(got_float[0], hashed_bow("Alice met Bob", 64))


@pytest.mark.asyncio
async def test_embedding_func_via_lightrag_client(scripted_server):
    embed = make_embedding_func(scripted_server, dim=32)
    vecs = await embed(["Alice met Bob", "Paris"], context="query")
    assert vecs.shape == (2, 32)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.allclose(vecs[1], hashed_bow("Paris", 32))


# ---------------------------------------------------------------------------- chat + rules
@pytest.mark.asyncio
async def test_openai_complete_if_cache_talks_to_server(scripted_server):
    answer = await openai_complete_if_cache(
        "scripted", "What is up?", system_prompt="Be brief.", base_url=scripted_server.base_url, api_key="sk-x"
    )
    assert answer.startswith(CANNED_PREFIX) and "What is up?" in answer
    (req,) = scripted_server.chat_requests()
    assert [m["role"] for m in req.body["messages"]] == ["system", "user"]
    assert req.body["model"] == "scripted" and req.status == 200


@pytest.mark.asyncio
async def test_rules_first_match_wins_and_times(scripted_server):
    llm = make_llm_func(scripted_server)
    scripted_server.script("capital", "Paris", times=1)
    scripted_server.script(re.compile(r"capit\w+"), lambda body: f"echo:{len(body['messages'])}")
    scripted_server.script(lambda body: body.get("temperature") == 0.5, "warm")
    assert await llm("the capital of France?") == "Paris"
    assert await llm("the capital again?", system_prompt="sys") == "echo:2"
    assert await llm("anything", temperature=0.5) == "warm"
    assert (await llm("no rule")).startswith(CANNED_PREFIX)
    assert scripted_server.rules[0].hits == 1


@pytest.mark.asyncio
async def test_async_callable_reply(scripted_server):
    async def reply(body):
        await asyncio.sleep(0)
        return body["messages"][-1]["content"].upper()

    scripted_server.script(None, reply)
    assert await make_llm_func(scripted_server)("shout") == "SHOUT"


@pytest.mark.asyncio
async def test_streaming(scripted_server):
    scripted_server.script("stream", "alpha beta  gamma\ndelta")
    stream = await make_llm_func(scripted_server)("please stream", stream=True)
    pieces = [piece async for piece in stream]
    assert len(pieces) > 1
    assert "".join(pieces) == "alpha beta  gamma\ndelta"
    assert scripted_server.chat_requests()[0].body["stream"] is True


@pytest.mark.asyncio
async def test_error_500_is_retried_then_raised_quickly(scripted_server):
    scripted_server.error("boom")
    start = time.perf_counter()
    with pytest.raises(tenacity.RetryError) as info:
        await make_llm_func(scripted_server)("boom now")
    assert isinstance(info.value.last_attempt.exception(), openai.InternalServerError)
    assert time.perf_counter() - start < 2.0  # fast_retry drops tenacity's 4-10 s waits
    assert scripted_server.count("boom") == 3  # LightRAG's tenacity policy: 3 attempts
    assert all(r.status == 500 for r in scripted_server.chat_requests())


@pytest.mark.asyncio
async def test_transient_error_then_success(scripted_server):
    scripted_server.error(times=1)
    assert (await make_llm_func(scripted_server)("hello")).startswith(CANNED_PREFIX)
    assert [r.status for r in scripted_server.chat_requests()] == [500, 200]


@pytest.mark.asyncio
async def test_error_400_is_not_retried(scripted_server):
    scripted_server.error(status=400)
    with pytest.raises(openai.BadRequestError):
        await make_llm_func(scripted_server)("bad")
    assert scripted_server.count() == 1


@pytest.mark.asyncio
async def test_garbage_answer(scripted_server):
    scripted_server.garbage("json please")
    assert await make_llm_func(scripted_server)("json please") == GARBAGE


@pytest.mark.asyncio
async def test_delay_rule_runs_concurrently(scripted_server):
    scripted_server.script(Rule(match="slow", reply="done", delay=0.05))
    llm = make_llm_func(scripted_server)
    answers = await asyncio.gather(*(llm(f"slow {i}") for i in range(8)))
    assert answers == ["done"] * 8
    # Overlap is read from the server's own request intervals, not from wall time (which load distorts).
    assert scripted_server.max_in_flight >= 2
    assert all(r.t_end - r.t_start >= 0.05 for r in scripted_server.chat_requests())


@pytest.mark.asyncio
async def test_global_delay(scripted_server):
    scripted_server.delay = 0.05
    start = time.perf_counter()
    await make_llm_func(scripted_server)("hi")
    assert time.perf_counter() - start >= 0.05


@pytest.mark.asyncio
async def test_recording_count_and_reset(scripted_server):
    llm = make_llm_func(scripted_server)
    await llm("first question")
    await llm("second question", system_prompt="marker-x")
    reqs = scripted_server.chat_requests()
    assert len(reqs) == 2 and reqs[0].time <= reqs[1].time
    assert "first question" in reqs[0].text
    assert scripted_server.count("marker-x") == 1
    assert scripted_server.count(lambda body: len(body["messages"]) == 1) == 1
    scripted_server.script("x", "y")
    scripted_server.reset()
    assert scripted_server.requests == [] and scripted_server.rules == []


# ---------------------------------------------------------------------------- responder
def test_keywords_answer_uses_query():
    prompt = "You are an expert keyword extractor\n---Real Data---\nUser Query: Who founded Nimbus Inc?\n\n---Output---\nOutput:"
    payload = json.loads(keywords_answer(prompt))
    assert payload == {"high_level_keywords": ["Nimbus Inc"], "low_level_keywords": ["Nimbus Inc"]}


def test_summary_answer_joins_descriptions():
    prompt = 'Description List:\n\n```\n{"Description": "A."}\n{"Description": "B."}\n```\n\n---Output---\n'
    assert summary_answer(prompt) == "A. B."


def test_gleaning_answer():
    body = {"messages": [{"role": "user", "content": "Based on the last extraction task, find more"}]}
    assert lightrag_responder(body) == COMPLETE
    body["response_format"] = {"type": "json_object"}
    assert json.loads(lightrag_responder(body)) == {"entities": [], "relationships": []}


# ---------------------------------------------------------------------------- LightRAG end to end
async def _build_rag(server, tmp_path, **overrides) -> LightRAG:
    rag = LightRAG(**lightrag_kwargs(server, tmp_path, **overrides))
    await rag.initialize_storages()
    return rag


async def _insert_docs(rag: LightRAG) -> None:
    await rag.ainsert(DOCS, ids=["doc-a", "doc-b", "doc-c"], file_paths=["a.txt", "b.txt", "c.txt"])


@pytest.mark.asyncio
async def test_lightrag_insert_and_query_end_to_end(scripted_server, tmp_path):
    rag = await _build_rag(scripted_server, tmp_path)
    try:
        await _insert_docs(rag)
        nodes = await rag.chunk_entity_relation_graph.get_all_nodes()
        edges = await rag.chunk_entity_relation_graph.get_all_edges()
        names = {n["id"] for n in nodes}
        assert {"Alice Smith", "Acme Corp", "Nimbus Inc", "Bob Jones", "Paris"} <= names
        assert len(edges) >= 5
        assert scripted_server.count("---Input Text---") == 3  # one extraction call per chunk
        result = await rag.aquery_data("Where does Alice Smith work?", QueryParam(mode="hybrid", enable_rerank=False))
        assert result["status"] == "success"
        assert "Alice Smith" in {e["entity_name"] for e in result["data"]["entities"]}
        assert result["data"]["chunks"]
        assert scripted_server.count("expert keyword extractor") == 1
        answer = await rag.aquery("Where does Alice Smith work?", QueryParam(mode="mix", enable_rerank=False))
        assert answer.startswith(CANNED_PREFIX)
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_lightrag_json_mode_and_gleaning(scripted_server, tmp_path):
    rag = await _build_rag(
        scripted_server, tmp_path, entity_extraction_use_json=True, entity_extract_max_gleaning=1
    )
    try:
        await _insert_docs(rag)
        extraction = [r for r in scripted_server.chat_requests() if "JSON Contract" in r.text]
        assert extraction and all(r.body.get("response_format") == {"type": "json_object"} for r in extraction)
        assert scripted_server.count("Based on the last extraction task") == 3
        assert await rag.chunk_entity_relation_graph.has_node("Carol White")
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_lightrag_llm_failure_marks_documents_failed(scripted_server, tmp_path):
    scripted_server.error("---Input Text---")
    rag = await _build_rag(scripted_server, tmp_path)
    try:
        await rag.ainsert(DOCS[:1], ids=["doc-a"])
        status = await rag.doc_status.get_by_id("doc-a")
        assert status["status"] == "failed"
        assert scripted_server.count("---Input Text---") == 3
    finally:
        await rag.finalize_storages()
