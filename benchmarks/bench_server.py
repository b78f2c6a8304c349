"""HTTP overhead of `lightrag-prism serve`: ``POST /query/data`` against in-process ``aquery_data``, same index.

    python benchmarks/bench_server.py                     # bundled MuSiQue sample (5 questions), modes below
    python benchmarks/bench_server.py --questions 20 --repeats 5 --modes naive,prism,hipporag,mix

The index is the demo's (the bundled MuSiQue sample from its precomputed triples, local MiniLM embedder), built on
first use in ``--working-dir``. The server runs in its own process on 127.0.0.1 over the same working dir and
workspace; this process opens the same index. Per mode, every question is asked ``--repeats`` times each way, the
two ways interleaved (one warm-up round first). Overhead = median HTTP latency - median in-process latency; the
ratio is their quotient. Target: overhead <= 10 ms. Writes ``benchmarks/results/bench_server.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402

from lightrag_prism import QueryParam  # noqa: E402
from lightrag_prism.eval.bench import load_dataset, open_index  # noqa: E402
from tests.server.support import running_server  # noqa: E402  (the tests' server launcher)

TARGET_MS = 10.0


def server_environment() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRISM_LLM", "LLM_", "EMBEDDING_", "LIGHTRAG_"))}
    env["HF_HUB_OFFLINE"] = "1"
    return env


async def measure(args) -> dict:
    dataset = load_dataset("musique", args.questions)
    working_dir = Path(args.working_dir)
    rag = await open_index(dataset, working_dir, progress=False)  # builds the index the first time
    root = working_dir.parent / f"{working_dir.name}_server"
    root.mkdir(parents=True, exist_ok=True)
    (root / "index").unlink(missing_ok=True)
    (root / "index").symlink_to(working_dir.resolve(), target_is_directory=True)
    questions = [q.text for q in dataset.questions]
    rows = []
    with running_server(root, server_environment(), "--workspace", dataset.name) as base:
        with httpx.Client(base_url=base, timeout=120) as client:
            for mode in args.modes.split(","):
                async def in_process(q: str) -> None:
                    result = await rag.aquery_data(q, QueryParam(mode=mode))
                    assert result["status"] == "success", result.get("message")

                def over_http(q: str) -> None:
                    reply = client.post("/query/data", json={"query": q, "mode": mode})
                    assert reply.status_code == 200 and reply.json()["status"] == "success", reply.text[:300]

                for q in questions:  # warm-up: query state, caches, connections
                    await in_process(q)
                    over_http(q)
                http_s, local_s = [], []
                for _ in range(args.repeats):
                    for q in questions:
                        t0 = time.perf_counter()
                        over_http(q)
                        t1 = time.perf_counter()
                        await in_process(q)
                        t2 = time.perf_counter()
                        http_s.append(t1 - t0)
                        local_s.append(t2 - t1)
                http_ms, local_ms = 1000 * statistics.median(http_s), 1000 * statistics.median(local_s)
                rows.append({"mode": mode, "n": len(http_s), "http_ms": round(http_ms, 2),
                             "in_process_ms": round(local_ms, 2), "overhead_ms": round(http_ms - local_ms, 2),
                             "ratio": round(http_ms / local_ms, 3)})
                print(f"{mode:>10}: HTTP {http_ms:8.2f} ms  in-process {local_ms:8.2f} ms  "
                      f"overhead {http_ms - local_ms:6.2f} ms  ratio {http_ms / local_ms:.3f}", flush=True)
    await rag.finalize_storages()
    return {"questions": len(questions), "repeats": args.repeats, "rows": rows,
            "median_overhead_ms": round(statistics.median(r["overhead_ms"] for r in rows), 2),
            "target_ms": TARGET_MS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", default="naive,prism,hipporag,mix,fidelis")
    parser.add_argument("--working-dir", default="prism_storage/bench_server")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for name in ("lightrag", "nano-vectordb", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
    report = asyncio.run(measure(args))
    print(f"median overhead across modes: {report['median_overhead_ms']} ms (target <= {TARGET_MS} ms)")
    write_json("bench_server", report)


if __name__ == "__main__":
    main()
