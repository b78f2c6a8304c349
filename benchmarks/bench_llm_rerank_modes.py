"""LLM calls and wall time of the ``tournament``/``ensemble`` modes and the listwise rerank function, counted by a
real OpenAI-compatible HTTP server (``tests/scripted_server.py``), through PrismRAG's LLM path (LightRAG's cache
and ``llm_model_max_async`` queue).

* Calls per query (server-counted, cold cache) for the tournament at n = 5, 10, 16, 40 documents, the listwise
  rerank function at 35 documents and the ensemble mode (expansion + windows); the same query again (LightRAG's
  cache: should be 0).
* Wall time with the server delaying every chat answer by 50 ms: ``llm_model_max_async=1`` (the baseline,
  measured in the same run) vs 4 and 8, printed as speed-up ratios.

The instance's ``llm_model_func`` here reuses one ``AsyncOpenAI`` client. LightRAG's own helper
(``openai_complete_if_cache``) builds a new client per call, which costs ~0.1 s of CPU per call on this machine
and does not parallelise; the ``lightrag_client`` row shows that cost.

Run from the repository root:  .venv/bin/python benchmarks/bench_llm_rerank_modes.py
Writes benchmarks/results/llm_rerank_modes.json. Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lightrag_prism import LightRAG, QueryParam  # noqa: E402
from lightrag_prism.rerankers import tournament_call_count  # noqa: E402
from lightrag_prism.rerankers.lightrag_adapter import rerank_model_func_for  # noqa: E402
from tests.helpers import make_embedding_func, make_llm_func, offline_tokenizer  # noqa: E402
from tests.retrievers.support import (  # noqa: E402
    EXPANSION_MARK, LISTWISE_MARK, PAIRWISE_MARK, listwise_judge, prefer_higher_number,
)
from tests.scripted_server import ScriptedServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "llm_rerank_modes.json"
TOPICS = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath"]
DOCS = [f"Document {i}: the {TOPICS[i % 8]} river flows through the valley near the old town, record {i}."
        for i in range(48)]
QUERY = "Which river flows through the valley near the old town?"
# six topic-focused queries: with the original, 7 queries x 5 chunks, ~35 distinct candidates
EXPANSION = json.dumps({"queries": [f"the {t} river" for t in TOPICS[:6]]})


def reused_client_llm(server: ScriptedServer):
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-bench")

    async def llm(prompt, system_prompt=None, history_messages=None, **kwargs):
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
            *(history_messages or []), {"role": "user", "content": prompt}]
        reply = await client.chat.completions.create(model="scripted", messages=messages)
        return reply.choices[0].message.content

    return llm


async def make_rag(server: ScriptedServer, max_async: int, lightrag_client: bool = False) -> LightRAG:
    rag = LightRAG(working_dir=tempfile.mkdtemp(prefix="bench_rerank_"), workspace=uuid.uuid4().hex[:12],
                   llm_model_func=make_llm_func(server) if lightrag_client else reused_client_llm(server),
                   embedding_func=make_embedding_func(server), tokenizer=offline_tokenizer(),
                   llm_model_max_async=max_async,
                   vector_db_storage_cls_kwargs={"cosine_better_than_threshold": 0.0})
    await rag.initialize_storages()
    chunks = [{"content": d, "source_id": f"s{i}"} for i, d in enumerate(DOCS)]
    await rag.ainsert_custom_kg({"chunks": chunks, "entities": [], "relationships": []})
    return rag


def script(server: ScriptedServer, delay: float) -> None:
    server.reset()
    server.delay = delay
    server.script(PAIRWISE_MARK, prefer_higher_number)
    server.script(LISTWISE_MARK, listwise_judge)
    server.script(EXPANSION_MARK, EXPANSION)


async def measure(server, case: str, n: int, max_async: int, delay: float, repeat: bool = False,
                  lightrag_client: bool = False) -> dict:
    """One case on a fresh instance (cold cache): server-counted calls, wall time, calls on a repeat."""
    rag = await make_rag(server, max_async, lightrag_client)
    script(server, delay)
    runs = []
    try:
        for _ in range(2 if repeat else 1):
            before, start = len(server.chat_requests()), time.perf_counter()
            if case == "tournament":
                await rag.aquery_data(QUERY, param=QueryParam(mode="tournament", rerank_top_k=n, return_top_k=n))
            elif case == "ensemble":
                data = await rag.aquery_data(QUERY, param=QueryParam(mode="ensemble"))
                n = data["metadata"]["prism"]["candidates"]
            else:  # the listwise rerank function on n documents
                await rerank_model_func_for(rag, "listwise")(QUERY, DOCS[:n], None)
            runs.append((len(server.chat_requests()) - before, time.perf_counter() - start))
    finally:
        await rag.finalize_storages()
    row = {"case": case, "n": n, "max_async": max_async, "delay_s": delay, "calls": runs[0][0],
           "wall_s": round(runs[0][1], 3), "max_in_flight": server.max_in_flight}
    if repeat:
        row["calls_on_repeat"] = runs[1][0]
    if case == "tournament":
        row["formula"] = tournament_call_count(n)
    return row


async def main() -> dict:
    server = ScriptedServer().start()
    try:
        counts = [await measure(server, "tournament", n, 4, 0.0, repeat=True) for n in (5, 10, 16, 40)]
        counts.append(await measure(server, "listwise", 35, 4, 0.0, repeat=True))
        counts.append(await measure(server, "ensemble", 35, 4, 0.0, repeat=True))
        timing = []
        for case, n in (("tournament", 16), ("tournament", 40), ("listwise", 35), ("ensemble", 35)):
            rows = [await measure(server, case, n, c, 0.05) for c in (1, 4, 8)]
            for row in rows:
                row["speedup_vs_sequential"] = round(rows[0]["wall_s"] / row["wall_s"], 2)
            timing += rows
        overhead = [await measure(server, "tournament", 16, c, 0.05, lightrag_client=True) for c in (1, 8)]
        for row in overhead:
            row["client"] = "lightrag openai_complete_if_cache (new client per call)"
    finally:
        server.stop()
    return {"calls": counts, "timing": timing, "lightrag_client": overhead}


def print_report(report: dict) -> None:
    print("LLM calls per query (server-counted, cold cache; then the same query again)")
    for r in report["calls"]:
        formula = f"  formula {r['formula']}" if "formula" in r else ""
        print(f"  {r['case']:<10} n={r['n']:<3} calls={r['calls']:<4} repeat={r['calls_on_repeat']}{formula}")
    print("Wall time, server delay 50 ms per answer (speed-up vs llm_model_max_async=1, same run)")
    for r in report["timing"] + report["lightrag_client"]:
        tag = " (lightrag client)" if "client" in r else ""
        speed = f"x{r['speedup_vs_sequential']:.2f}" if "speedup_vs_sequential" in r else ""
        print(f"  {r['case']:<10} n={r['n']:<3} max_async={r['max_async']} calls={r['calls']:<4} "
              f"{r['wall_s']:7.3f} s  peak in flight {r['max_in_flight']} {speed}{tag}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(main())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print_report(result)
