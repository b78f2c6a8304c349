"""Two `lightrag-prism serve` replicas over one PostgreSQL (+ Redis): latency per mode under uploads, and staleness.

    python benchmarks/bench_replicas.py                       # 60 s, 4 query clients, 1 upload/s, Redis + PG stack
    python benchmarks/bench_replicas.py --seconds 30 --clients 2 --stack postgres

Starts Redis and PostgreSQL + pgvector as the tests do (``tests/storages/servers.py``) and two server processes on
127.0.0.1, each with its own working dir, sharing every storage (``--stack``: the graph on PGTableGraphStorage).
Embeddings: the local MiniLM in each replica; no LLM (offline extraction, context answers). After a seed of 20
passages, for ``--seconds``: one uploader sends a new document every second to the replicas in turn, and
``--clients`` clients query every mode in turn on the replicas in turn. Per upload, a prober records when it is
PROCESSED (``/documents/track_status``) and then asks each replica with ``prism`` until it finds it: staleness is
that time; each replica's reload durations come from ``/prism/api/modes``. At the end every upload must be
PROCESSED and found by ``prism`` in both replicas. Prints p50/p95 latency per mode, the staleness and the reload
times; writes ``benchmarks/results/bench_replicas.json``. Loopback only, bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402

from lightrag_prism.eval.datasets import load_2wiki_corpus  # noqa: E402
from lightrag_prism.retrievers import valid_modes  # noqa: E402
from tests.server.support import free_port  # noqa: E402
from tests.storages.servers import STACKS, server_stack_env  # noqa: E402

MODES = [m for m in valid_modes() if m != "bypass"]
STARTUP_SECONDS, PROBE_SECONDS = 300.0, 120.0
ENV_OF = {"kv_storage": "LIGHTRAG_KV_STORAGE", "doc_status_storage": "LIGHTRAG_DOC_STATUS_STORAGE",
          "vector_storage": "LIGHTRAG_VECTOR_STORAGE", "graph_storage": "LIGHTRAG_GRAPH_STORAGE"}


def upload_text(k: int) -> tuple[str, str, str]:
    """A document only findable by its own question (invented names)."""
    return (f"The Vorrel{k} River flows through the town of Quennick{k}, where the mill of Ardo{k} stands.",
            f"upload-{k}.txt", f"Which river flows through Quennick{k}?")


def start_replica(root: Path, env: dict[str, str], name: str):
    import subprocess

    port, folder = free_port(), root / name
    folder.mkdir(parents=True)
    log = open(folder / "server.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "lightrag_prism", "serve", "--working-dir", str(folder / "index"),
                                "--input-dir", str(folder / "inputs"), "--host", "127.0.0.1", "--port", str(port)],
                               cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


async def wait_healthy(client: httpx.AsyncClient, base: str, process) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"replica {base} exited"
        try:
            if (await client.get(f"{base}/health", timeout=2)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"replica {base} did not start")


async def processed_at(client: httpx.AsyncClient, base: str, track_id: str) -> float:
    deadline = time.monotonic() + PROBE_SECONDS
    while time.monotonic() < deadline:
        docs = (await client.get(f"{base}/documents/track_status/{track_id}")).json().get("documents", [])
        if docs and all(d["status"] == "processed" for d in docs):
            return time.monotonic()
        if any(d["status"] == "failed" for d in docs):
            raise RuntimeError(f"upload {track_id} failed: {docs}")
        await asyncio.sleep(0.1)
    raise RuntimeError(f"upload {track_id} not processed in {PROBE_SECONDS} s")


async def finds(client: httpx.AsyncClient, base: str, question: str, file_name: str, mode: str = "prism") -> bool:
    reply = await client.post(f"{base}/query/data", json={"query": question, "mode": mode})
    return any(c.get("file_path") == file_name for c in reply.json().get("data", {}).get("chunks", []))


async def probe(client, bases, base, k, track_id, staleness) -> None:
    """Staleness of upload ``k``: from PROCESSED to found by prism, per replica."""
    _, file_name, question = upload_text(k)
    done = await processed_at(client, base, track_id)
    for replica in bases:
        while not await finds(client, replica, question, file_name):
            if time.monotonic() - done > PROBE_SECONDS:
                raise RuntimeError(f"upload {k} never found by prism in {replica}")
            await asyncio.sleep(0.1)
        staleness[replica].append(round(time.monotonic() - done, 3))


async def run(args, root: Path) -> dict:
    with server_stack_env(root / "servers") as servers:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PRISM_LLM", "LLM_", "EMBEDDING_"))}
        env.update(servers, WORKSPACE="bench", HF_HUB_OFFLINE="1",
                   **{ENV_OF[key]: value for key, value in STACKS[args.stack].items()})
        first = start_replica(root, env, "replica-a")  # first alone: it creates the tables
        async with httpx.AsyncClient(timeout=120) as client:
            await wait_healthy(client, first[1], first[0])
            second = start_replica(root, env, "replica-b")
            replicas = [first, second]
            try:
                await wait_healthy(client, second[1], second[0])
                return await load(args, client, [base for _, base in replicas])
            finally:
                for process, _ in replicas:
                    process.terminate()
                    process.wait(timeout=60)


async def load(args, client: httpx.AsyncClient, bases: list[str]) -> dict:
    seed = load_2wiki_corpus()[:20]
    reply = await client.post(f"{bases[0]}/documents/texts", json={
        "texts": [p.content for p in seed], "file_sources": [f"seed-{i}.txt" for i in range(len(seed))]})
    await processed_at(client, bases[0], reply.json()["track_id"])
    deadline = time.monotonic() + PROBE_SECONDS
    for base in bases:  # warm: each replica has loaded its embedder and taken in the seed before the clock starts
        while not await finds(client, base, seed[0].title, "seed-0.txt"):
            assert time.monotonic() < deadline, f"{base} never found the seed"
            await asyncio.sleep(0.2)
    latencies = {mode: [] for mode in MODES}
    staleness = {base: [] for base in bases}
    probes, uploads = [], []
    stop = time.monotonic() + args.seconds

    async def uploader():
        k = 0
        while time.monotonic() < stop:
            tick = time.monotonic()
            text, file_name, _ = upload_text(k)
            base = bases[k % len(bases)]
            reply = await client.post(f"{base}/documents/text", json={"text": text, "file_source": file_name})
            uploads.append(k)
            probes.append(asyncio.create_task(probe(client, bases, base, k, reply.json()["track_id"], staleness)))
            k += 1
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))

    async def querier(c: int):
        i = c
        while time.monotonic() < stop:
            mode, base = MODES[i % len(MODES)], bases[i % len(bases)]
            started = time.monotonic()
            reply = await client.post(f"{base}/query/data", json={"query": seed[i % len(seed)].title, "mode": mode})
            assert reply.status_code == 200, reply.text
            latencies[mode].append(time.monotonic() - started)
            i += 1

    await asyncio.gather(uploader(), *(querier(c) for c in range(args.clients)))
    await asyncio.gather(*probes)
    missing = [(k, base) for k in uploads for base in bases
               if not await finds(client, base, upload_text(k)[2], upload_text(k)[1])]
    reloads = [(await client.get(f"{base}/prism/api/modes")).json()["freshness"]["refresh_seconds"]
               for base in bases]
    return {"stack": args.stack, "seconds": args.seconds, "clients": args.clients, "uploads": len(uploads),
            "latency_ms": {m: {"n": len(v), "p50": 1000 * pct(v, 50), "p95": 1000 * pct(v, 95)}
                           for m, v in latencies.items()},
            "staleness_s": {f"replica {'ab'[i]}": {"p50": pct(v, 50), "p95": pct(v, 95), "max": max(v)}
                            for i, v in enumerate(staleness.values())},
            "staleness_each_s": {f"replica {'ab'[i]}": v for i, v in enumerate(staleness.values())},
            "reload_s": {f"replica {'ab'[i]}": {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95),
                                                "max": max(v or [0.0])} for i, v in enumerate(reloads)},
            "final_check": {"processed": len(uploads), "missing_in_prism": missing}}


def pct(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--stack", choices=list(STACKS), default="redis+pgvector")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_replicas_") as folder:
        result = asyncio.run(run(args, Path(folder)))
    print(f"{args.stack}: 2 replicas, {args.clients} query clients, {result['uploads']} uploads in {args.seconds:.0f} s")
    print(f"{'mode':<12}{'queries':>8}{'p50 ms':>10}{'p95 ms':>10}")
    for mode, row in result["latency_ms"].items():
        print(f"{mode:<12}{row['n']:>8}{row['p50']:>10.1f}{row['p95']:>10.1f}")
    for name, row in result["staleness_s"].items():
        print(f"staleness {name}: p50 {row['p50']:.2f} s, p95 {row['p95']:.2f} s, max {row['max']:.2f} s "
              "(PROCESSED -> found by prism)")
    for name, row in result["reload_s"].items():
        print(f"reloads after the other replica's writes, {name}: {row['n']}, p50 {row['p50']:.2f} s, "
              f"p95 {row['p95']:.2f} s, max {row['max']:.2f} s")
    check = result["final_check"]
    print(f"final check: {check['processed']} uploads processed, {len(check['missing_in_prism'])} not found by prism")
    write_json("bench_replicas", result)
    if check["missing_in_prism"]:
        raise SystemExit(f"missing: {check['missing_in_prism']}")


if __name__ == "__main__":
    main()
