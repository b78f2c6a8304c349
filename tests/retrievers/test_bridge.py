"""The bridge step of ``prism`` and ``hipporag``: the page of an entity the first passage names takes rank 2
(a real insert through the offline extractor; hash embedder, so the lexical channel of the fusion ranks)."""

from __future__ import annotations

import pytest

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.prose import passage_title
from lightrag_prism.retrievers.views.passage_graph import _passage_data, variant_key
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

pytestmark = pytest.mark.asyncio

PAGES = {
    "ostby": "# Maren Ostby\n\nMaren Ostby is the chief technology officer of Tidewell. She studied naval architecture "
             "at the University of Halden and graduated in 2001.",
    "halden": "# University of Halden\n\nThe University of Halden was founded in 1893 in the city of Halden. Professor "
              "Elin Varga is the head of its naval architecture faculty.",
    # pages that share the question's words without being its second hop
    "harbour": "# Harbour Office\n\nThe harbour office heads the department of ports in Fenwick. Its ferry desk sells "
               "tickets for the morning boats to Skerra and keeps a list of moorings for visiting yachts.",
    "council": "# Fenwick Council\n\nThe council heads the department of roads in Aberlin. It meets every Tuesday "
               "evening at the old town hall near the market square and publishes its minutes online.",
    "tidewell": "# Tidewell\n\nTidewell builds tidal turbines in Carrick Bay. Its chief executive is Tomas Reyes.",
}
QUESTION = "Who heads the department in which Tidewell's chief technology officer studied?"


async def _ranked(rag, mode: str, **knobs) -> list[dict]:
    result = await rag.aquery_data(QUESTION, QueryParam(mode=mode, **knobs))
    return result["data"]["chunks"]


def _page(chunk: dict) -> str:
    return next(name for name, text in PAGES.items() if text == chunk["content"])


@pytest.mark.parametrize("mode", ["prism", "hipporag"])
async def test_the_page_of_the_first_passages_bridge_takes_rank_two(tmp_path, mode):
    rag = PrismRAG(working_dir=str(tmp_path), workspace=f"{tmp_path.name}_{mode}", embedding_func=hash_embedding_func(),
                   tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    try:
        await rag.ainsert(list(PAGES.values()), ids=list(PAGES))
        without = [_page(c) for c in await _ranked(rag, mode, bridge_pool=0)]
        assert without[0] == "ostby" and without[1] != "halden", without  # the step has something to do
        chunks = await _ranked(rag, mode)
        ranked = [_page(c) for c in chunks]
        assert ranked[:2] == ["ostby", "halden"], ranked
        assert ranked[2:] == [page for page in without[1:] if page != "halden"]  # the rest keep their order
        result = await rag.aquery_data(QUESTION, QueryParam(mode=mode))
        assert "bridge" in result["data"]["chunks"][1]["found_by"]
        # a pool too small to reach the bridge page leaves the ranking alone
        assert [_page(c) for c in await _ranked(rag, mode, bridge_pool=without.index("halden"))] == without
    finally:
        await rag.finalize_storages()


async def test_a_passage_is_the_home_of_its_titles_name():
    assert passage_title("Vantor Composites - supplier record\n\nVantor Composites makes parts.") == "Vantor Composites"
    assert _passage_data({"content": "# The Old Ropeworks\n\nA rope walk.", "file_path": "f"})["home_of"] == \
        variant_key("Old Ropeworks")
    assert _passage_data({"content": "One sentence only.", "file_path": "f"})["home_of"] == ""
    assert _passage_data(None) == {"content": "", "file_path": "unknown_source", "valid": False, "home_of": ""}
