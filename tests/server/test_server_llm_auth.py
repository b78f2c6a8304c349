"""`lightrag-prism serve` with an LLM (the scripted OpenAI-compatible server) and LIGHTRAG_API_KEY: answers plus
evidence in every plugin mode, LightRAG's LLM extraction on upload, and the key required on the plugin's routes."""

from __future__ import annotations

import httpx
import pytest

from lightrag_prism.retrievers import registered_modes
from tests.scripted_responder import CANNED_PREFIX
from tests.scripted_server import ScriptedServer
from tests.server.support import running_server, server_env, wait_processed

KEY = "s3cret-key"
USER, PASSWORD = "analyst", "pw-for-tests-123"
QUESTION = "Which river flows through the town where Odile Farrant opened her bakery?"
TEXTS = ["Odile Farrant opened her bakery in Lunebourg in 2004.",
         "The river Sarn flows through Lunebourg before reaching the sea."]


@pytest.fixture(scope="module")
def with_llm(tmp_path_factory):
    scripted = ScriptedServer().start()
    root = tmp_path_factory.mktemp("serve_llm")
    try:
        env = server_env(scripted, llm=True, api_key=KEY)
        env.update(AUTH_ACCOUNTS=f"{USER}:{PASSWORD}", TOKEN_SECRET="a-test-token-secret-of-some-length")
        with running_server(root, env) as base:
            with httpx.Client(base_url=base, timeout=60, headers={"X-API-Key": KEY}) as client:
                reply = client.post("/documents/texts", json={"texts": TEXTS, "file_sources": ["a.txt", "b.txt"]})
                assert reply.status_code == 200, reply.text
                wait_processed(client, 2)
                yield client, base, scripted, root
    finally:
        scripted.stop()


def test_upload_was_extracted_by_the_llm(with_llm):
    client, _, scripted, _ = with_llm
    assert any("Odile Farrant" in r.text for r in scripted.requests)  # the extraction prompt went to the LLM
    assert "Odile Farrant" in client.get("/graph/label/list").json()


@pytest.mark.parametrize("mode", [*registered_modes(), "mix"])
def test_query_answers_with_the_llm(with_llm, mode):
    client, _, _, _ = with_llm
    body = client.post("/query", json={"query": QUESTION, "mode": mode}).json()
    assert body["response"].startswith(CANNED_PREFIX) and body["llm_generated"] is True


def test_explorer_returns_answer_and_evidence(with_llm):
    client, _, _, _ = with_llm
    result = client.post("/prism/api/query", json={"query": QUESTION, "mode": "prism", "answer": True}).json()
    assert result["answer"].startswith(CANNED_PREFIX) and result["note"] is None
    assert {"a.txt", "b.txt"} <= {c["file_path"] for c in result["data"]["chunks"]}
    assert result["graph"]["nodes"] and result["metadata"]["prism"]["llm_configured"] is True
    assert client.get("/prism/api/modes").json()["llm_configured"] is True


def test_api_key_is_required(with_llm):
    _, base, _, _ = with_llm
    for method, path, body in (("POST", "/query/data", {"query": QUESTION, "mode": "prism"}),
                               ("POST", "/prism/api/query", {"query": QUESTION, "mode": "prism"}),
                               ("GET", "/prism/api/modes", None)):
        refused = httpx.request(method, base + path, json=body, timeout=30)
        assert refused.status_code in (401, 403), (path, refused.status_code)
        wrong = httpx.request(method, base + path, json=body, headers={"X-API-Key": "wrong"}, timeout=30)
        assert wrong.status_code in (401, 403)
        assert httpx.request(method, base + path, json=body, headers={"X-API-Key": KEY}, timeout=60).status_code == 200
    assert httpx.get(base + "/prism", timeout=30).status_code == 200  # the page itself, like /webui, is public


def test_account_login_token_works_on_the_plugin_routes(with_llm):
    _, base, _, _ = with_llm
    login = httpx.post(base + "/login", data={"username": USER, "password": PASSWORD}, timeout=30)
    assert login.status_code == 200, login.text
    bearer = {"Authorization": f"Bearer {login.json()['access_token']}"}
    assert httpx.get(base + "/prism/api/modes", headers=bearer, timeout=30).status_code == 200
    reply = httpx.post(base + "/query/data", json={"query": QUESTION, "mode": "hipporag"}, headers=bearer, timeout=60)
    assert reply.status_code == 200 and reply.json()["status"] == "success"
    bad = httpx.post(base + "/login", data={"username": USER, "password": "wrong"}, timeout=30)
    assert bad.status_code == 401


def test_scan_of_the_input_dir_then_query_and_pipeline_status(with_llm):
    client, _, _, root = with_llm
    (root / "inputs").mkdir(exist_ok=True)
    (root / "inputs" / "sarn.md").write_text("The Sarn bridge in Lunebourg was built by Hector Malvy in 1832.\n")
    assert client.post("/documents/scan").status_code == 200
    wait_processed(client, 3)
    status = client.get("/documents/pipeline_status").json()
    assert status["busy"] is False
    data = client.post("/query/data", json={"query": "Who built the bridge over the river in Lunebourg?",
                                            "mode": "prism"}).json()
    assert "sarn.md" in {c["file_path"] for c in data["data"]["chunks"]}
