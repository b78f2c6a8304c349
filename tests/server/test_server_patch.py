"""The pure pieces of server/integration.py: Ollama mode prefixes and timestamps sent with texts."""

import pytest

from lightrag_prism.insert.pipeline import content_key
from lightrag_prism.server.integration import PendingTimestamps, plugin_search_modes, prism_parse_query_mode
from lightrag_prism.retrievers import registered_modes


def stock_parse(query):
    return query, "stock", False, None


@pytest.fixture
def parse():
    return prism_parse_query_mode(stock_parse, plugin_search_modes())


@pytest.mark.parametrize("mode", registered_modes())
def test_plugin_prefixes(parse, mode):
    cleaned, found, context_only, prompt = parse(f"/{mode}   Who designed it?")
    assert (cleaned, found.value, context_only, prompt) == ("Who designed it?", mode, False, None)
    assert found == mode  # a str enum: LightRAG compares and formats it as the mode name
    cleaned, found, context_only, _ = parse(f"/{mode}context Who designed it?")
    assert (cleaned, found.value, context_only) == ("Who designed it?", mode, True)


def test_bracketed_user_prompt(parse):
    assert parse("/prism[answer in French] Who designed it?")[::3] == ("Who designed it?", "answer in French")


def test_everything_else_goes_to_lightrag(parse):
    for query in ("/local Who?", "/prismatic colours", "Who designed /prism it?", "/prism", "/mix[x] q"):
        assert parse(query)[1] == "stock", query


@pytest.mark.asyncio
async def test_pending_timestamps_are_claimed_once(monkeypatch):
    rag = object()
    pending = PendingTimestamps()
    pending.add("text one", "2024-03-01")
    pending.add("text two", None)
    with pytest.raises(ValueError, match="timestamp"):
        pending.add("text three", "bad]stamp")
    saved = []

    async def save(rag, stamps):
        saved.append((rag, stamps))

    monkeypatch.setattr("lightrag_prism.insert.api.save_doc_timestamps", save)
    await pending.claim(rag, ["text one", "text two"])
    await pending.claim(rag, ["text one"])
    assert saved == [(rag, {content_key("text one"): "2024-03-01"})]
    assert pending.by_content == {}
