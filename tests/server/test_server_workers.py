"""``lightrag-prism serve --workers 2``: LightRAG's gunicorn runner with PrismRAG, on the default file storages.
An upload processed by one worker is found by every mode in both workers (the graph version in the shared
``prism_state`` store, LightRAG's update flags for its own file storages): in the other worker after its next
version poll and rebuild, and from then on in every answer; the other worker follows the graph and vector files
through their journals (``journal.catch_up``)."""

from __future__ import annotations

import time

import httpx

from lightrag_prism.retrievers import valid_modes
from lightrag_prism.server.explorer import WORKER_HEADER
from tests.server.support import running_server, server_env, wait_processed

MODES = [m for m in valid_modes() if m != "bypass"]
OLD = ["Marta Olvide was born in Vexholm, a port city in Norway."]
NEW = ["The Vexholm Lighthouse was designed by Anders Brekke in 1870."]
QUESTION = "Who designed the Vexholm Lighthouse?"
ROUNDS = 6  # queries per mode, each on a new connection: the kernel spreads them over the workers
# The contract (docs/scale-out.md): a worker that did not process the upload reflects it within its version poll
# (0.5 s) plus its rebuild. Generous here, for a loaded CI box.
CATCH_UP_SECONDS = 30


def ask(base: str, mode: str) -> tuple[str, list[str]]:
    reply = httpx.post(f"{base}/query/data", json={"query": QUESTION, "mode": mode}, timeout=60,
                       headers={"Connection": "close"})
    assert reply.status_code == 200, reply.text
    return reply.headers[WORKER_HEADER], [c["file_path"] for c in reply.json()["data"].get("chunks", [])]


def test_every_mode_of_both_workers_finds_an_upload(scripted_server, tmp_path):
    with running_server(tmp_path, server_env(scripted_server, llm=False), "--workers", "2") as base:
        with httpx.Client(base_url=base, timeout=60) as client:
            for done, (text, name) in enumerate([(OLD, "birth.txt"), (NEW, "house.txt")], start=1):
                reply = client.post("/documents/texts", json={"texts": text, "file_sources": [name]})
                assert reply.status_code == 200, reply.text
                wait_processed(client, done)

        # Until every mode of both workers has found the upload once (a bounded catch-up)...
        found, deadline = set(), time.monotonic() + CATCH_UP_SECONDS
        while len(found) < 2 * len(MODES):
            assert time.monotonic() < deadline, f"not caught up in {CATCH_UP_SECONDS} s: {sorted(found)}"
            for mode in MODES:
                worker, files = ask(base, mode)
                if "house.txt" in files:
                    found.add((mode, worker))

        # ...then every answer of every mode in either worker finds it.
        misses = []
        for _ in range(ROUNDS):
            for mode in MODES:
                worker, files = ask(base, mode)
                if "house.txt" not in files:
                    misses.append((mode, worker, files))
        assert len({worker for _, worker in found}) == 2, found  # both workers answered
        assert misses == []

        # Each worker holds the graph and the vector stores itself; the flushes after the first upload (which
        # created the files) were appended to their journals, and the other worker applied the graph's appends
        # instead of reading it whole (journal.catch_up). A vector store is read when a worker first uses it (its
        # file as it is then), so no worker read one whole a second time.
        files = freshness_files(base)
        assert len(files) == 2, files
        for name in ("graph_chunk_entity_relation.graphml", "vdb_chunks.json", "vdb_entities.json"):
            assert sum(worker[name]["appends"] for worker in files.values()) >= 1, (name, files)
        graph = "graph_chunk_entity_relation.graphml"
        assert sum(worker[graph]["catch_ups"] for worker in files.values()) >= 1, files
        assert all(worker[name]["reloads"] == 0 for worker in files.values()
                   for name in ("vdb_chunks.json", "vdb_entities.json")), files


def freshness_files(base: str) -> dict[str, dict]:
    """Each worker's journal status (``/prism/api/modes``), by worker, asked on new connections until both said."""
    files, deadline = {}, time.monotonic() + CATCH_UP_SECONDS
    while len(files) < 2 and time.monotonic() < deadline:
        reply = httpx.get(f"{base}/prism/api/modes", timeout=60, headers={"Connection": "close"})
        assert reply.status_code == 200, reply.text
        files[reply.headers[WORKER_HEADER]] = reply.json()["freshness"]["files"]
    return files
