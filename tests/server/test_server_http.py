"""`lightrag-prism serve` over real HTTP: uploads through the plugin's insert path, every mode on every query
route, validation errors that list the modes, the Ollama-compatible prefixes, the explorer API, no LLM."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from lightrag_prism.retrievers import registered_modes, valid_modes
from tests.citations.corpus import make_manual
from tests.helpers import read_store_file
from tests.server.support import running_server, server_env, wait_processed
from tests.scripted_server import ScriptedServer


QUESTION = "Who designed the lighthouse in the city where Marta Olvide was born?"
TEXTS = [
    "Marta Olvide directed the film Glass Harbour, released in 1998.",
    "Marta Olvide was born in Vexholm, a port city in Norway.",
    "The Vexholm Lighthouse was designed by Anders Brekke in 1870.",
]
SOURCES = ["olvide_film.txt", "olvide_birth.txt", "vexholm.txt"]
HTML_PAGE = ("<!DOCTYPE html><html><head><title>t</title><style>p {color: red}</style></head><body>"
             "<p>Awards won by Glass Harbour.</p><table><tr><th>Year</th><th>Award</th></tr>"
             "<tr><td>1999</td><td>Nordic Film Prize</td></tr></table><p>End of the list.</p></body></html>")
PAGED = ("# Vexholm Lighthouse\nThe lamp of the Vexholm Lighthouse is kept lit by Ida Brekke.\f"
         "She took over from her grandfather Anders Brekke in 1931.")
RETRIEVAL_MODES = [m for m in valid_modes() if m != "bypass"]


@pytest.fixture(scope="module")
def scripted():
    server = ScriptedServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def offline(scripted, tmp_path_factory):
    """A server without an LLM, holding the three texts (with timestamps), one uploaded HTML page, a text with two
    pages and an uploaded 12-page PDF."""
    root = tmp_path_factory.mktemp("serve_offline")
    with running_server(root, server_env(scripted, llm=False)) as base:
        with httpx.Client(base_url=base, timeout=60) as client:
            reply = client.post("/documents/texts", json={"texts": TEXTS, "file_sources": SOURCES,
                                                          "timestamps": ["1998-05-01", "1970-01-01", "1870-06-30"]})
            assert reply.status_code == 200, reply.text
            wait_processed(client, 3)
            upload = client.post("/documents/upload", files={"file": ("awards.html", HTML_PAGE, "text/html")})
            assert upload.status_code == 200, upload.text
            wait_processed(client, 4)
            paged = client.post("/documents/texts", json={"texts": [PAGED], "file_sources": ["wenna.pdf"]})
            assert paged.status_code == 200, paged.text
            wait_processed(client, 5)
            pdf = make_manual(root / "manual.pdf").read_bytes()
            upload = client.post("/documents/upload", files={"file": ("manual.pdf", pdf, "application/pdf")})
            assert upload.status_code == 200, upload.text
            wait_processed(client, 6)
            yield client, root


def stored_chunks(root) -> list[dict]:
    return list(read_store_file(str(root / "index" / "kv_store_text_chunks.json")).values())  # with its journal


def test_uploads_go_through_the_plugin_insert_path(offline):
    client, root = offline
    chunks = stored_chunks(root)
    vexholm = [c["content"] for c in chunks if c["file_path"] == "vexholm.txt"]
    assert vexholm[0].startswith("[Time: 1870-06-30]\n")  # the timestamp sent with the text
    page = [c["content"] for c in chunks if c["file_path"] == "awards.html"]
    # the page's text, its table whole in one chunk, no head/style markup
    assert any("<table>" in c and "</table>" in c and "Nordic Film Prize" in c for c in page)
    assert not any(tag in c for c in page for tag in ("<style>", "<body>", "color: red", "<title>"))


def test_query_routes_return_citations_with_pages_and_sections(offline):
    """A text posted with form feeds between its pages: /query/data's chunks cite file, pages, section and span,
    /query's references keep the pages and sections (LightRAG's reference model would drop them)."""
    client, _ = offline
    question = "Who keeps the Vexholm lighthouse lamp lit?"
    data = client.post("/query/data", json={"query": question, "mode": "prism", "chunk_top_k": 5}).json()
    cited = [c["citation"] for c in data["data"]["chunks"] if c["file_path"] == "wenna.pdf"]
    assert cited and cited[0]["file"] == "wenna.pdf" and cited[0]["pages"] == [1, 2]
    assert cited[0]["section"] == "Vexholm Lighthouse" and len(cited[0]["span"]) == 2
    for mode in ("prism", "naive"):
        body = client.post("/query", json={"query": question, "mode": mode, "include_references": True}).json()
        wenna = [r for r in body["references"] if r["file_path"] == "wenna.pdf"]
        assert wenna and wenna[0]["pages"] == [1, 2] and wenna[0]["sections"] == ["Vexholm Lighthouse"], body
    # an uploaded PDF is read page by page, with its outline as sections
    data = client.post("/query/data", json={"query": "How often is valve V06-07 inspected by crew 5?",
                                            "mode": "naive", "chunk_top_k": 10}).json()
    manual = [c for c in data["data"]["chunks"] if c["file_path"] == "manual.pdf"]
    assert manual and all(c["citation"]["pages"] and c["citation"]["section"].startswith("Chapter ")
                          for c in manual), manual
    for chunk in manual:  # each whole valve sentence names its page: a cited one
        for page in re.findall(r"on page (\d+) is inspected every \d+ days by crew \d+\.", chunk["content"]):
            assert chunk["citation"]["pages"][0] <= int(page) <= chunk["citation"]["pages"][1]


def test_upload_then_multi_hop_query_finds_both_hops(offline):
    client, _ = offline
    reply = client.post("/query/data", json={"query": QUESTION, "mode": "prism", "chunk_top_k": 3})
    assert reply.status_code == 200
    body = reply.json()
    files = [c["file_path"] for c in body["data"]["chunks"]]
    assert {"olvide_birth.txt", "vexholm.txt"} <= set(files)
    assert all("score" in c and c["found_by"] for c in body["data"]["chunks"])
    assert body["metadata"]["prism"]["llm_configured"] is False


@pytest.mark.parametrize("mode", RETRIEVAL_MODES)
def test_every_mode_on_query_data(offline, mode):
    client, _ = offline
    body = client.post("/query/data", json={"query": QUESTION, "mode": mode, "top_k": 10}).json()
    assert body["status"] == "success", body
    assert body["metadata"]["query_mode"] == mode
    assert body["data"]["chunks"], body["message"]
    if mode in registered_modes():
        assert "prism" in body["metadata"]


@pytest.mark.parametrize("mode", RETRIEVAL_MODES)
def test_every_mode_on_query_without_llm_returns_context_with_a_note(offline, mode):
    client, _ = offline
    reply = client.post("/query", json={"query": QUESTION, "mode": mode})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["response"].startswith("[lightrag_prism] No LLM is configured")
    assert "Vexholm" in body["response"] and body["llm_generated"] is False


@pytest.mark.parametrize("mode", ["prism", "hipporag", "fidelis", "naive"])
def test_query_stream_in_plugin_and_stock_modes(offline, mode):
    client, _ = offline
    reply = client.post("/query/stream", json={"query": QUESTION, "mode": mode})
    assert reply.status_code == 200
    lines = [json.loads(line) for line in reply.text.splitlines() if line.strip()]
    text = "".join(line.get("response", "") for line in lines)
    assert "No LLM is configured" in text and "Vexholm" in text
    assert not any("error" in line for line in lines)


def test_unknown_mode_is_a_4xx_listing_the_valid_modes(offline):
    client, _ = offline
    for route, status in (("/query", 422), ("/query/stream", 422), ("/query/data", 400)):
        reply = client.post(route, json={"query": QUESTION, "mode": "pagerank"})
        assert reply.status_code == status, (route, reply.text)
        assert "Unknown query mode 'pagerank'" in reply.text
        assert all(mode in reply.text for mode in valid_modes())


def test_plugin_knobs_are_accepted_and_checked(offline):
    client, _ = offline
    ok = client.post("/query/data", json={"query": QUESTION, "mode": "prism", "max_hop": 1, "ppr_damping": 0.6,
                                          "prism_dense_head": 0})
    assert ok.status_code == 200
    assert ok.json()["metadata"]["prism"]["expansion"]["knobs"]["max_hop"] == 1
    bad = client.post("/query/data", json={"query": QUESTION, "mode": "prism", "ppr_damping": 3})
    assert bad.status_code == 400 and "ppr_damping must be in (0, 1)" in bad.json()["message"]
    typo = client.post("/query", json={"query": QUESTION, "mode": "hipporag", "linking_top_k": "many"})
    assert typo.status_code == 422


@pytest.mark.parametrize("prefix", ["/prism", "/hipporag", "/fidelis", "/ensemble", "/tournament"])
def test_ollama_chat_accepts_plugin_mode_prefixes(offline, prefix):
    client, _ = offline
    body = {"model": "lightrag:latest", "stream": False,
            "messages": [{"role": "user", "content": f"{prefix} {QUESTION}"}]}
    reply = client.post("/api/chat", json=body)
    assert reply.status_code == 200, reply.text
    content = reply.json()["message"]["content"]
    assert content.startswith("[lightrag_prism] No LLM is configured") and "Vexholm" in content
    context_only = client.post("/api/chat", json={**body, "messages": [
        {"role": "user", "content": f"{prefix}context {QUESTION}"}]}).json()["message"]["content"]
    assert "No LLM is configured" not in context_only and "Vexholm" in context_only


@pytest.mark.parametrize("route", ["/query/data", "/query", "/query/stream"])
def test_a_mode_typed_before_the_question_is_the_mode_used(offline, route):
    """LightRAG's WebUI offers only the stock modes and sends the text as typed: "/prism question" picks prism."""
    client, _ = offline
    reply = client.post(route, json={"query": f"/prism {QUESTION}", "mode": "mix"})
    assert reply.status_code == 200, reply.text
    if route == "/query/data":
        body = reply.json()
        assert body["metadata"]["query_mode"] == "prism" and "prism" in body["metadata"], body["metadata"]
        assert any(c.get("found_by") for c in body["data"]["chunks"])  # prism's own annotations
        typed = client.post(route, json={"query": f"/hipporag {QUESTION}", "mode": "naive"}).json()
        assert typed["metadata"]["query_mode"] == "hipporag"
    else:  # the same request model: the answer (here the context, no LLM) comes from the prism query
        assert "Vexholm" in reply.text
    plain = client.post("/query/data", json={"query": f"/nomode {QUESTION}", "mode": "naive"}).json()
    assert plain["metadata"]["query_mode"] == "naive"  # not a mode: the text is left alone


def test_ollama_generate_without_llm_answers_with_the_note(offline):
    client, _ = offline
    reply = client.post("/api/generate", json={"model": "lightrag:latest", "stream": False, "prompt": QUESTION})
    assert reply.status_code == 200, reply.text
    assert reply.json()["response"].startswith("[lightrag_prism] No LLM is configured")


def test_stock_routes_and_webui_still_work(offline):
    client, _ = offline
    assert client.get("/webui/").status_code == 200
    labels = client.get("/graph/label/list").json()
    assert "Marta Olvide" in labels
    graph = client.get("/graphs", params={"label": "Marta Olvide", "max_depth": 2}).json()
    assert any(node["id"] == "Marta Olvide" for node in graph["nodes"])
    docs = client.post("/documents/paginated", json={"page": 1, "page_size": 10}).json()
    assert len(docs["documents"]) == 6
    stock = client.post("/query/data", json={"query": QUESTION, "mode": "local"}).json()
    assert stock["status"] == "success"


def test_explorer_page_and_api(offline):
    client, _ = offline
    page = client.get("/prism")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert 'src="/prism/static/explorer.js"' in page.text and "http://" not in page.text.replace(
        'xmlns="http://', "").split("<body>")[0]
    assert client.get("/prism/static/explorer.js").status_code == 200
    modes = client.get("/prism/api/modes").json()
    assert modes["modes"] == valid_modes() and modes["llm_configured"] is False
    result = client.post("/prism/api/query", json={"query": QUESTION, "mode": "prism", "answer": True}).json()
    assert result["answer"] is None and result["note"].startswith("[lightrag_prism] No LLM")
    kinds = {node["kind"] for node in result["graph"]["nodes"]}
    assert kinds == {"seed", "entity", "passage"}
    assert "Marta Olvide" in result["graph"]["seeds"]
    assert {"mentions", "relation"} <= {edge["kind"] for edge in result["graph"]["edges"]}
    assert result["data"]["chunks"][0]["found_by"]
    assert client.post("/prism/api/query", json={"query": QUESTION, "mode": "nope"}).status_code == 422
