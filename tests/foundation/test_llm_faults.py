"""Every mode survives every LLM fault, through the scripted OpenAI-compatible server and the real client.

Faults: the endpoint unreachable (an exception), a timeout, HTTP 400 and 500, a completion with empty ``choices``,
a body that is not JSON, garbage text and deeply nested JSON as the answer. For each, with the fault on every chat
call: ``aquery_data`` in every plugin mode succeeds with the fallbacks recorded; ``aquery`` raises
``LLMCallError`` naming the endpoint (or, for answers that arrive but are nonsense, returns them); with
``answer_without_llm="context"`` it returns the context with a note. Stock modes keep LightRAG's behaviour unless
``stock_mode_llm_fallbacks=True``.
"""

from __future__ import annotations

import json
import time

import pytest

from lightrag_prism import LLMCallError, PrismRAG, QueryParam, openai_compatible_llm
from lightrag_prism.retrievers import registered_modes
from tests.helpers import lightrag_kwargs
from tests.scripted_server import GARBAGE, ScriptedServer
from tests.server.support import free_port

DOCS = ["Marta Olvide was born in Vexholm, a port city in Norway.",
        "The Vexholm Lighthouse was designed by Anders Brekke in 1870.",
        "Anders Brekke also designed the harbour of Tromso."]
QUESTION = "Who designed the lighthouse in the city where Marta Olvide was born?"
DEEP_JSON = "[" * 5000 + "]" * 5000
EMPTY_CHOICES = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
                            "choices": []})
TIMEOUT = 0.5
# name -> (how to script it, whether an answer still arrives: garbage and deep JSON are answers, just useless)
FAULTS = {
    "exception": (None, False),
    "timeout": (lambda s: s.script(None, "late", delay=3 * TIMEOUT), False),
    "http_400": (lambda s: s.error(status=400), False),
    "http_500": (lambda s: s.error(status=500), False),
    "empty_choices": (lambda s: s.raw(EMPTY_CHOICES), False),
    "malformed_json": (lambda s: s.raw('{"choices": [{"message": '), False),
    "garbage": (lambda s: s.garbage(), True),
    "deep_json": (lambda s: s.script(None, DEEP_JSON), True),
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """Three documents indexed through a working LLM; every test then breaks the LLM its own way."""
    server = ScriptedServer().start()
    kwargs = lightrag_kwargs(server, str(tmp_path_factory.mktemp("faults")))
    import asyncio

    async def build():
        rag = PrismRAG(**{**kwargs, "llm_model_func": openai_compatible_llm("scripted", server.base_url, "k")})
        await rag.initialize_storages()
        await rag.ainsert(DOCS)
        await rag.finalize_storages()

    asyncio.run(build())
    yield server, kwargs
    server.stop()


async def broken_rag(indexed, fault: str, **options) -> PrismRAG:
    server, kwargs = indexed
    server.reset()
    script, _ = FAULTS[fault]
    base_url = f"http://127.0.0.1:{free_port()}/v1" if script is None else server.base_url
    if script is not None:
        script(server)
    llm = openai_compatible_llm("scripted", base_url, "k", max_retries=0, timeout=TIMEOUT)
    rag = PrismRAG(**{**kwargs, "llm_model_func": llm, "enable_llm_cache": False, **options})
    await rag.initialize_storages()
    return rag


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", FAULTS)
async def test_every_plugin_mode_retrieves_despite_the_fault(indexed, fault):
    rag = await broken_rag(indexed, fault)
    server = indexed[0]
    try:
        for mode in registered_modes():
            requests_before = server.count()
            result = await rag.aquery_data(QUESTION, QueryParam(mode=mode, enable_rerank=False))
            assert result["status"] == "success", (mode, result.get("message"))
            assert result["data"]["chunks"], mode
            steps = {f["step"] for f in result["metadata"]["prism"]["fallbacks"]}
            assert "keywords" not in steps, mode  # no plugin mode asks the LLM for LightRAG's keywords by default
            if mode == "prism":  # by default (no recognition filter) its retrieval asks the LLM nothing
                # (this graph of a few passages is thin: the fusion ranks, which is about the graph, not the LLM)
                assert steps <= {"thin_graph"} and server.count() == requests_before, steps
            else:
                assert steps, (mode, "no fallback recorded")
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_modes_that_ignore_lightrags_keywords_do_not_ask_the_llm_for_them(indexed):
    from tests.scripted_responder import KEYWORD_MARKER, messages_text

    server, kwargs = indexed
    server.reset()
    rag = PrismRAG(**{**kwargs, "llm_model_func": openai_compatible_llm("scripted", server.base_url, "k"),
                      "enable_llm_cache": False})
    await rag.initialize_storages()

    def keyword_requests() -> int:
        return server.count(lambda body: KEYWORD_MARKER in messages_text(body))

    try:
        data = await rag.aquery_data(QUESTION, QueryParam(mode="prism", enable_rerank=False))
        assert data["data"]["chunks"] and server.count() == 0  # prism's retrieval asked the LLM nothing
        # and nothing fell back for want of an LLM (this graph of a few passages is thin: the fusion ranks)
        assert [f["step"] for f in data["metadata"]["prism"]["fallbacks"]] == ["thin_graph"]
        assert "Marta Olvide" in data["metadata"]["keywords"]["low_level"]  # kg_query got the offline keywords
        await rag.aquery(QUESTION, QueryParam(mode="prism", enable_rerank=False))
        assert server.count() == 1  # an answer costs its one call
        await rag.aquery_data(QUESTION, QueryParam(mode="fidelis", enable_rerank=False))
        assert keyword_requests() == 0 and server.count() > 0  # fidelis asked for its plan, not for keywords
        # prism embeds the keywords only with prism_keyword_vectors, and then asks for them; stock modes always do
        for mode, options, expected in (("prism", {"prism_keyword_vectors": True}, 1), ("hybrid", {}, 2)):
            await rag.aquery_data(QUESTION, QueryParam(mode=mode, enable_rerank=False, **options))
            assert keyword_requests() == expected, mode
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", FAULTS)
async def test_answers_raise_one_documented_error_naming_the_endpoint(indexed, fault):
    rag = await broken_rag(indexed, fault)
    _, answer_arrives = FAULTS[fault]
    try:
        for mode in registered_modes():
            if answer_arrives:  # the LLM answered; its answer is nonsense, and that is what the caller gets
                assert isinstance(await rag.aquery(QUESTION, QueryParam(mode=mode, enable_rerank=False)), str)
                continue
            with pytest.raises(LLMCallError) as err:
                await rag.aquery(QUESTION, QueryParam(mode=mode, enable_rerank=False))
            assert "/v1 (model 'scripted')" in str(err.value) and err.value.cause, mode
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", ["http_500", "timeout"])
async def test_answer_without_llm_context_returns_the_context_with_a_note(indexed, fault):
    rag = await broken_rag(indexed, fault, answer_without_llm="context")
    try:
        for mode in [*registered_modes(), "hybrid"]:
            options = {"stock_mode_llm_fallbacks": True} if mode == "hybrid" else {}
            rag.stock_mode_llm_fallbacks = bool(options)
            result = await rag.aquery_llm(QUESTION, QueryParam(mode=mode, enable_rerank=False))
            content = result["llm_response"]["content"]
            assert content.startswith("[lightrag_prism] The LLM failed") and "Vexholm" in content, mode
            assert result["metadata"]["prism"]["fallbacks"][-1]["step"] == "answer"
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_stock_modes_keep_lightrags_behaviour_unless_opted_in(indexed):
    rag = await broken_rag(indexed, "http_500")
    try:
        stock = await rag.aquery_llm(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
        assert stock["status"] == "failure" and stock["message"].startswith("Query failed")  # LightRAG's own
        assert stock["llm_response"]["content"] is None and "prism" not in stock["metadata"]
        rag.stock_mode_llm_fallbacks = True
        data = await rag.aquery_data(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
        assert data["status"] == "success"
        assert [f["step"] for f in data["metadata"]["prism"]["fallbacks"]] == ["keywords"]
        with pytest.raises(LLMCallError):
            await rag.aquery(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_retries_are_bounded_by_the_knob(indexed):
    server, _ = indexed
    for retries in (0, 2):
        rag = await broken_rag(indexed, "http_500")
        rag_llm = openai_compatible_llm("scripted", server.base_url, "k", max_retries=retries)
        started = time.perf_counter()
        with pytest.raises(Exception):
            await rag_llm("hello")
        assert server.count() == retries + 1
        assert time.perf_counter() - started < 1 + 2 * retries  # waits of 0.5 to 4 s, not LightRAG's 4 to 10 s
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_opted_in_stock_mode_whose_answer_alone_fails_raises_llm_call_error(indexed):
    from tests.scripted_responder import KEYWORD_MARKER, messages_text

    server, kwargs = indexed
    server.reset()
    server.script(lambda body: KEYWORD_MARKER not in messages_text(body), "answer refused", status=500)
    llm = openai_compatible_llm("scripted", server.base_url, "k", max_retries=0, timeout=TIMEOUT)
    rag = PrismRAG(**{**kwargs, "llm_model_func": llm, "enable_llm_cache": False, "stock_mode_llm_fallbacks": True})
    await rag.initialize_storages()
    try:
        data = await rag.aquery_data(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
        assert "prism" not in data["metadata"]  # the keywords came from the LLM: nothing fell back
        with pytest.raises(LLMCallError):  # not LightRAG's failure dict
            await rag.aquery(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_a_refused_connection_ends_the_querys_llm_calls(monkeypatch):
    """After one call of a query finds the endpoint refusing connections, the query's other LLM steps (a
    tournament asks dozens) take their fallback at once; another failure does not."""
    from types import SimpleNamespace

    from lightrag_prism import context
    from lightrag_prism.param import PrismQueryParam

    calls = []

    async def refused(*args, **kwargs):
        calls.append(kwargs["cache_type"])
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise RuntimeError("Connection error.") from exc

    monkeypatch.setattr(context, "cached_llm_call", refused)
    ctx = context.QueryContext(rag=SimpleNamespace(llm_configured=True), query="q",
                               param=PrismQueryParam(mode="tournament"))
    answers = [await ctx.llm("p", step=f"judge{i}") for i in range(5)]
    assert answers == [None] * 5 and calls == ["judge0"]
    reasons = [f["reason"] for f in ctx.retrieval.metadata["fallbacks"]]
    assert len(reasons) == 5 and all("Connection error" in r for r in reasons)

    async def timed_out(*args, **kwargs):
        calls.append(kwargs["cache_type"])
        raise TimeoutError("read timed out")

    monkeypatch.setattr(context, "cached_llm_call", timed_out)
    other = context.QueryContext(rag=SimpleNamespace(llm_configured=True), query="q",
                                 param=PrismQueryParam(mode="tournament"))
    for i in range(3):
        await other.llm("p", step=f"t{i}")
    assert calls[1:] == ["t0", "t1", "t2"]  # a timeout may be transient: each step still asks
