"""`lightrag-prism serve --workers 2` under load: 8 concurrent clients for 60 s while uploads arrive.

    python benchmarks/bench_serve_load.py --index /tmp/bench/pooled/pooled-9002 --workspace pooled

The server runs on 127.0.0.1 over an index a bench built (the pooled one: ``bench_pooled.py``), with the local
MiniLM it was built with and no LLM. ``--clients`` clients each send ``POST /query/data`` back to back (modes
``naive``, ``prism``, ``hipporag`` in turn, the bundled MuSiQue and HotpotQA questions) for ``--seconds``; one more
client posts a new short text to ``/documents/text`` every ``--upload-every`` seconds (each is indexed by a worker
while the others answer; the texts stay in the index, each run's own, and the run waits until they are processed
before it stops the server). Per mode: p50 / p95 / p99 ms and errors
(anything but HTTP 200 with status success, or a timeout); peak RSS of every process of the server (gunicorn's
master, its workers, the embedder's workers), sampled every 0.5 s. Writes ``benchmarks/results/serve_load.json``.
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import uuid
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402
from bench_server import server_environment  # noqa: E402

from lightrag_prism.eval.bench import load_dataset  # noqa: E402
from tests.server.support import running_server  # noqa: E402

MODES = ("naive", "prism", "hipporag")


class PeakRSS:
    """Peak resident memory per process of a process tree, sampled in a thread."""

    def __init__(self, root_pid: int, interval: float = 0.5) -> None:
        self.root, self.interval, self.peaks = psutil.Process(root_pid), interval, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                continue
            for process in tree:
                try:
                    name = f"{self._role(process)} (pid {process.pid})"
                    self.peaks[name] = max(self.peaks.get(name, 0), process.memory_info().rss)
                except psutil.Error:
                    continue

    def _role(self, process) -> str:
        if process.pid == self.root.pid:
            return "serve (launcher)"
        if any("embed_worker" in part for part in process.cmdline()):
            return "embedder worker"
        return "server process"

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


async def client(base: str, questions, deadline: float, latencies: dict, errors: dict) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for mode, question in questions:
            if time.monotonic() > deadline:
                return
            start = time.perf_counter()
            try:
                reply = await http.post("/query/data", json={"query": question, "mode": mode})
                ok = reply.status_code == 200 and reply.json().get("status") == "success"
            except httpx.HTTPError:
                ok = False
            latencies[mode].append((time.perf_counter() - start) * 1000)
            errors[mode] += not ok


async def uploader(base: str, deadline: float, every: float, outcome: dict) -> None:
    """New texts, named and worded by this run (the index keeps them: a text it already holds would be refused)."""
    if every <= 0:
        return
    run = uuid.uuid4().hex[:8]
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for n in itertools.count():
            if time.monotonic() + every > deadline:
                return
            await asyncio.sleep(every)
            text = f"Load test note {run}-{n}: the harbour crane {run}-{n} was serviced by Mara Quist on day {n}."
            reply = await http.post("/documents/text", json={"text": text, "file_source": f"load_{run}_{n}.txt"})
            outcome["sent"] += 1
            if reply.status_code != 200 or reply.json().get("status") not in ("success", "partial_success"):
                outcome["errors"] += 1
                outcome.setdefault("error_replies", []).append(f"{reply.status_code} {reply.text[:120]}")


async def settled(base: str, limit: float = 300.0) -> float | None:
    """Seconds until the document pipeline is idle (two polls in a row), None past ``limit``."""
    start, idle = time.monotonic(), 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        while time.monotonic() - start < limit:
            reply = await http.get("/documents/pipeline_status")
            idle = idle + 1 if reply.status_code == 200 and not reply.json().get("busy") else 0
            if idle == 2:
                return round(time.monotonic() - start, 1)
            await asyncio.sleep(1.0)
    return None


async def run(base: str, args) -> dict:
    questions = [q.text for name in ("musique", "hotpotqa") for q in load_dataset(name, None).questions]
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:  # warm: every mode once
        for mode in MODES:
            await http.post("/query/data", json={"query": questions[0], "mode": mode})
    latencies, errors = {m: [] for m in MODES}, {m: 0 for m in MODES}
    uploads = {"sent": 0, "errors": 0}
    deadline = time.monotonic() + args.seconds
    streams = [[(MODES[(i + j) % len(MODES)], questions[(i * 37 + j) % len(questions)]) for j in range(100_000)]
               for i in range(args.clients)]
    await asyncio.gather(*(client(base, s, deadline, latencies, errors) for s in streams),
                         uploader(base, deadline, args.upload_every, uploads))
    if args.upload_every > 0:  # the last uploads finish before the server stops (else they stay in the index,
        uploads["settled_s"] = await settled(base)  # interrupted, and the next run's first pipeline resumes them)
    modes = {}
    for mode in MODES:
        ms = np.asarray(latencies[mode])
        quantiles = {f"p{q}": round(float(np.percentile(ms, q)), 1) for q in (50, 95, 99)} if ms.size else {}
        modes[mode] = {"requests": int(ms.size), "errors": errors[mode], **quantiles}
    return {"modes": modes, "uploads": uploads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True, help="an index a bench built (its working dir)")
    parser.add_argument("--workspace", default="pooled")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--upload-every", type=float, default=5, help="seconds; 0: no uploads")
    parser.add_argument("--root", default="/tmp/bench_serve_load")
    args = parser.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "index").unlink(missing_ok=True)
    (root / "index").symlink_to(Path(args.index).resolve(), target_is_directory=True)
    env = {**server_environment(), "WORKSPACE": args.workspace}
    with running_server(root, env, "--workers", str(args.workers)) as base:
        server = next(p for p in psutil.process_iter(["cmdline"])
                      if "serve" in (p.info["cmdline"] or []) and str(root / "index") in (p.info["cmdline"] or []))
        with PeakRSS(server.pid) as peaks:
            report = asyncio.run(run(base, args))
    report.update(workers=args.workers, clients=args.clients, seconds=args.seconds,
                  peak_rss_mb={name: round(rss / 2**20) for name, rss in sorted(peaks.peaks.items())})
    for mode, row in report["modes"].items():
        print(f"{mode:>9}: {row}")
    print("uploads:", report["uploads"])
    for name, mb in report["peak_rss_mb"].items():
        print(f"  {mb:6d} MB  {name}")
    write_json("serve_load" if args.upload_every > 0 else "serve_load_no_uploads", report)


if __name__ == "__main__":
    main()
