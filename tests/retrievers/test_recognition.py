"""Context recognition filtering through the instance's LLM (scripted OpenAI-compatible server)."""

from __future__ import annotations

import json
import re

import pytest

from lightrag_prism import QueryParam
from lightrag_prism.retrievers.recognition import RECOGNITION_SYSTEM_PROMPT
from tests.helpers import make_llm_func
from tests.retrievers._kg import HL, LL, QUERY, chunk_id_of, make_rag
from tests.scripted_responder import messages_text

pytestmark = pytest.mark.asyncio
IS_RECOGNITION = "Which items are irrelevant to the question?"


def qp(mode="prism", **kw) -> QueryParam:
    # prism returns at most top_k entities: 10 leaves room for all the expansion finds; stock modes take 2
    top_k = 10 if mode == "prism" else 2
    return QueryParam(**{"mode": mode, "ll_keywords": LL, "hl_keywords": HL, "top_k": top_k, "enable_rerank": False,
                         **kw})


def flagger(*needles: str):
    """A reply flagging, by short id, every listed item whose line contains one of ``needles``."""

    def reply(body: dict) -> str:
        ids = [m.group(1) for line in messages_text(body).splitlines() for m in [re.match(r"\[([ERC]\d+)\] (.*)", line)]
               if m and any(n in m.group(2) for n in needles)]
        return json.dumps({"irrelevant": ids})

    return reply


def rows(result):
    d = result["data"]
    return ([e["entity_name"] for e in d["entities"]], [(r["src_id"], r["tgt_id"]) for r in d["relationships"]],
            [c["chunk_id"] for c in d["chunks"]])


async def run(tmp_path, server, param, *needles, garbage=False, error=False, query=QUERY):
    if garbage:
        server.garbage(IS_RECOGNITION)
    elif error:
        server.error(IS_RECOGNITION)
    else:
        server.script(IS_RECOGNITION, flagger(*needles))
    rag = await make_rag(tmp_path, llm_model_func=make_llm_func(server))
    try:
        baseline = await rag.aquery_data(query, param)
        filtered = await rag.aquery_data(query, _with_recognition(param))
    finally:
        await rag.finalize_storages()
    return baseline, filtered


def _with_recognition(param: QueryParam) -> QueryParam:
    from dataclasses import replace

    return replace(param, enable_recognition=True)


def without(seq, removed):
    return [x for x in seq if x not in removed]


async def test_flagged_items_are_removed_by_id_and_order_is_kept(tmp_path, scripted_server):
    base, got = await run(tmp_path, scripted_server, qp(recognition_batch_size=4),
                          "entity Bob Stone", "relation Echo Lake -- Fox Canal", "passage: Echo Lake feeds")
    (be, br, bc), (ge, gr, gc) = rows(base), rows(got)
    assert "Bob Stone" in be and ("Echo Lake", "Fox Canal") in br and chunk_id_of("c_far") in bc
    assert ge == without(be, {"Bob Stone"})
    assert gr == without(br, {("Echo Lake", "Fox Canal")})
    assert chunk_id_of("c_far") not in gc
    recognition = got["metadata"]["prism"]["recognition"]
    assert recognition["removed"] == 3 and recognition["batches"] >= 3
    requests = [r for r in scripted_server.chat_requests() if IS_RECOGNITION in r.text]
    assert len(requests) == recognition["batches"]
    assert all(RECOGNITION_SYSTEM_PROMPT in r.text for r in requests)
    labelled = [re.findall(r"^\[([ERC]\d+)\]", r.text, re.M) for r in requests]
    flat = [s for batch in labelled for s in batch]
    assert len(flat) == len(set(flat)) == recognition["items"] and all(len(b) <= 4 for b in labelled)


async def test_entity_on_a_path_between_kept_entities_survives(tmp_path, scripted_server):
    # seeds Alice Vance and Gallery Nine (both named in the query); everything else is reached by multi-hop paths
    param = QueryParam(mode="prism", ll_keywords=["Alice Vance", "Gallery Nine"], hl_keywords=HL, top_k=10,
                       enable_rerank=False, multi_hop_relevance_threshold=0.0, top_ppr_nodes=0, top_fastrp_nodes=0,
                       prism_seed_facts=0)
    base, got = await run(tmp_path, scripted_server, param, "entity Townsville", "relation Alice Vance -- Townsville",
                          "entity Gallery Nine", query=f"{QUERY} And what did Gallery Nine show?")
    (be, br, _), (ge, gr, _) = rows(base), rows(got)
    assert {"Townsville", "Blue River", "Gallery Nine"} <= set(be)
    assert "Townsville" in ge and "Gallery Nine" not in ge  # on Alice Vance -> Townsville -> Blue River
    assert ("Alice Vance", "Townsville") in gr
    assert ge == without(be, {"Gallery Nine"})


async def test_path_entity_goes_when_the_path_end_goes_too(tmp_path, scripted_server):
    param = qp(multi_hop_relevance_threshold=0.0, top_ppr_nodes=0, top_fastrp_nodes=0,
               prism_seed_facts=0)  # Alice Vance (named) is the only seed: the rest is reached by multi-hop paths
    _, got = await run(tmp_path, scripted_server, param, "entity Townsville", "entity Blue River",
                       "relation Townsville -- Blue River")
    ge, gr, _ = rows(got)
    assert "Townsville" not in ge and "Blue River" not in ge
    assert ("Townsville", "Blue River") not in gr


@pytest.mark.parametrize("failure", ["garbage", "error"])
async def test_bad_answer_keeps_everything_and_records_the_fallback(tmp_path, scripted_server, failure):
    base, got = await run(tmp_path, scripted_server, qp(), garbage=failure == "garbage", error=failure == "error")
    assert rows(got) == rows(base)
    steps = [f for f in got["metadata"]["prism"]["fallbacks"] if f["step"] == "recognition"]
    assert steps and got["metadata"]["prism"]["recognition"]["removed"] == 0


async def test_no_llm_keeps_everything_and_records_it(tmp_path):
    rag = await make_rag(tmp_path)
    try:
        base = await rag.aquery_data(QUERY, qp())
        got = await rag.aquery_data(QUERY, qp(enable_recognition=True))
    finally:
        await rag.finalize_storages()
    assert rows(got) == rows(base)
    assert any(f["step"] == "recognition" and "no LLM" in f["reason"] for f in got["metadata"]["prism"]["fallbacks"])


async def test_recognition_inside_a_stock_mode(tmp_path, scripted_server):
    base, got = await run(tmp_path, scripted_server, qp("hybrid"), "entity Bob Stone")
    (be, _, _), (ge, _, _) = rows(base), rows(got)
    assert ge == without(be, {"Bob Stone"})
    assert all(e["found_by"] == "stock" for e in got["data"]["entities"])


async def test_batches_run_concurrently(tmp_path, scripted_server):
    scripted_server.script(IS_RECOGNITION, flagger(), delay=0.3)
    rag = await make_rag(tmp_path, llm_model_func=make_llm_func(scripted_server))
    try:
        got = await rag.aquery_data(QUERY, qp(enable_recognition=True, recognition_batch_size=3))
    finally:
        await rag.finalize_storages()
    assert got["metadata"]["prism"]["recognition"]["batches"] >= 3
    assert scripted_server.max_in_flight >= 2
