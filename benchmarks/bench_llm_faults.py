"""The fault × mode table: what ``aquery_data`` and ``aquery`` do in every mode when the LLM fails.

    python benchmarks/bench_llm_faults.py

Three documents indexed through the scripted OpenAI-compatible server (tests/scripted_server.py), then each fault
on every chat call, the real client (``openai_compatible_llm``, ``max_retries=0``, 0.5 s timeout). Cells: ``ok`` (a
result; ``+N fb`` = fallbacks recorded), ``LLMCallError``, ``failure dict`` (LightRAG's own), or the exception type;
with the time taken. Stock modes run with LightRAG's behaviour (``stock_mode_llm_fallbacks=False``).
Writes ``benchmarks/results/bench_llm_faults.json``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402

from lightrag_prism import LLMCallError, PrismRAG, QueryParam, openai_compatible_llm  # noqa: E402
from lightrag_prism.retrievers import valid_modes  # noqa: E402
from tests.foundation.test_llm_faults import DOCS, FAULTS, QUESTION, TIMEOUT  # noqa: E402
from tests.helpers import lightrag_kwargs  # noqa: E402
from tests.scripted_server import ScriptedServer  # noqa: E402
from tests.server.support import free_port  # noqa: E402

MODES = [m for m in valid_modes() if m != "bypass"]


def outcome(result, seconds: float) -> str:
    if isinstance(result, BaseException):
        name = "LLMCallError" if isinstance(result, LLMCallError) else type(result).__name__
        return f"{name} ({seconds:.1f}s)"
    if isinstance(result, dict) and result.get("status") == "failure":
        return f"failure dict ({seconds:.1f}s)"
    fallbacks = len(((result or {}).get("metadata") or {}).get("prism", {}).get("fallbacks", [])) \
        if isinstance(result, dict) else 0
    return f"ok{f' +{fallbacks} fb' if fallbacks else ''} ({seconds:.1f}s)"


async def attempt(call):
    started = time.perf_counter()
    try:
        result = await call()
    except Exception as exc:  # noqa: BLE001 - the table records it
        result = exc
    return outcome(result, time.perf_counter() - started)


async def main() -> None:
    server = ScriptedServer().start()
    kwargs = lightrag_kwargs(server, tempfile.mkdtemp(prefix="faults_"))
    rag = PrismRAG(**{**kwargs, "llm_model_func": openai_compatible_llm("scripted", server.base_url, "k")})
    await rag.initialize_storages()
    await rag.ainsert(DOCS)
    await rag.finalize_storages()
    table = {}
    for fault, (script, _) in FAULTS.items():
        server.reset()
        base_url = f"http://127.0.0.1:{free_port()}/v1" if script is None else server.base_url
        if script is not None:
            script(server)
        llm = openai_compatible_llm("scripted", base_url, "k", max_retries=0, timeout=TIMEOUT)
        broken = PrismRAG(**{**kwargs, "llm_model_func": llm, "enable_llm_cache": False})
        await broken.initialize_storages()
        for mode in MODES:
            param = QueryParam(mode=mode, enable_rerank=False)
            data = await attempt(lambda: broken.aquery_data(QUESTION, param))
            answer = await attempt(lambda: broken.aquery_llm(QUESTION, param))
            table[fault, mode] = (data, answer)
            print(f"{fault:>15} {mode:>10}: aquery_data {data:<24} aquery {answer}", flush=True)
        await broken.finalize_storages()
    server.stop()
    print("\n| fault | " + " | ".join(MODES) + " |\n|---|" + "---|" * len(MODES))
    for fault in FAULTS:
        print(f"| {fault} | " + " | ".join(f"{table[fault, m][0]}<br>{table[fault, m][1]}" for m in MODES) + " |")
    write_json("bench_llm_faults", {f"{f}/{m}": {"aquery_data": d, "aquery": a} for (f, m), (d, a) in table.items()})


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    for name in ("lightrag", "nano-vectordb", "openai", "httpx"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    asyncio.run(main())
