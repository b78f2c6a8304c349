"""LightRAG Server's "clear documents" (`DELETE /documents`) also clears what the plugin derived from them: the
graph snapshot the modes query, the name and fact vectors, merge aliases and document timestamps."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from lightrag_prism.vector_log import VectorLog
from tests.scripted_server import ScriptedServer
from tests.server.support import running_server, server_env, wait_processed

OLD = ["Marta Olvide was born in Vexholm, a port city in Norway.",
       "The Vexholm Lighthouse was designed by Anders Brekke in 1870."]
NEW = ["Petra Lund was born in Ostervik, a mining town in Sweden."]


@pytest.fixture
def scripted():
    server = ScriptedServer().start()
    yield server
    server.stop()


def _files(client, question: str, mode: str) -> list[str]:
    body = client.post("/query/data", json={"query": question, "mode": mode}).json()
    assert body["status"] in ("success", "failure"), body
    return [c["file_path"] for c in (body.get("data") or {}).get("chunks", [])]


def _cleared(client) -> None:
    reply = client.delete("/documents")
    assert reply.status_code == 200 and reply.json()["status"] == "success", reply.text
    deadline = time.monotonic() + 60
    while client.get("/documents/status_counts").json()["status_counts"].get("all", 0):
        assert time.monotonic() < deadline, "documents not cleared"
        time.sleep(0.3)


@pytest.mark.parametrize("mode", ["prism", "hipporag"])
def test_clearing_documents_leaves_nothing_for_the_modes_to_find(scripted, tmp_path, mode):
    with running_server(tmp_path, server_env(scripted, llm=False)) as base, \
            httpx.Client(base_url=base, timeout=60) as client:
        assert client.post("/documents/texts", json={"texts": OLD, "file_sources": ["birth.txt", "house.txt"],
                                                     "timestamps": ["1970", "1870"]}).status_code == 200
        wait_processed(client, 2)
        assert "house.txt" in _files(client, "Who designed the Vexholm Lighthouse?", mode)
        _cleared(client)
        assert _files(client, "Who designed the Vexholm Lighthouse?", mode) == []
        state = json.loads((tmp_path / "index" / "kv_store_prism_state.json").read_text())
        vectors = VectorLog(str(tmp_path / "index" / "prism_vectors.bin"))  # the name and fact vectors
        assert "doc_timestamps" not in state and len(vectors) == 0
        assert client.post("/documents/texts", json={"texts": NEW, "file_sources": ["lund.txt"]}).status_code == 200
        wait_processed(client, 1)
        assert set(_files(client, "Where was Petra Lund born?", mode)) == {"lund.txt"}
