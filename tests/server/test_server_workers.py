"""``lightrag-prism serve --workers 2``: LightRAG's gunicorn runner with PrismRAG, on the default file storages.
An upload processed by one worker is found by every mode in both workers (the graph version in the shared
``prism_state`` store, LightRAG's update flags for its own file storages)."""

from __future__ import annotations

import httpx

from lightrag_prism.retrievers import valid_modes
from lightrag_prism.server.explorer import WORKER_HEADER
from tests.server.support import running_server, server_env, wait_processed

MODES = [m for m in valid_modes() if m != "bypass"]
OLD = ["Marta Olvide was born in Vexholm, a port city in Norway."]
NEW = ["The Vexholm Lighthouse was designed by Anders Brekke in 1870."]
QUESTION = "Who designed the Vexholm Lighthouse?"
ROUNDS = 6  # queries per mode, each on a new connection: the kernel spreads them over the workers


def test_every_mode_of_both_workers_finds_an_upload(scripted_server, tmp_path):
    with running_server(tmp_path, server_env(scripted_server, llm=False), "--workers", "2") as base:
        with httpx.Client(base_url=base, timeout=60) as client:
            for done, (text, name) in enumerate([(OLD, "birth.txt"), (NEW, "house.txt")], start=1):
                reply = client.post("/documents/texts", json={"texts": text, "file_sources": [name]})
                assert reply.status_code == 200, reply.text
                wait_processed(client, done)
        workers, misses = set(), []
        for _ in range(ROUNDS):
            for mode in MODES:
                reply = httpx.post(f"{base}/query/data", json={"query": QUESTION, "mode": mode}, timeout=60,
                                   headers={"Connection": "close"})
                assert reply.status_code == 200, reply.text
                workers.add(reply.headers[WORKER_HEADER])
                files = [c["file_path"] for c in reply.json()["data"].get("chunks", [])]
                if "house.txt" not in files:
                    misses.append((mode, reply.headers[WORKER_HEADER], files))
        assert len(workers) == 2, workers  # both workers answered
        assert misses == []
