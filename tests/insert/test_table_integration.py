"""Table-aware chunking inside PrismRAG: a no-op on plain text, tables whole and extracted with table guidance."""

from __future__ import annotations

import pytest
from lightrag.chunker.token_size import chunking_by_token_size

from lightrag_prism import PrismRAG
from lightrag_prism.insert.tables.chunker import TABLE_EXTRACTION_GUIDANCE
from tests.helpers import lightrag_kwargs, offline_tokenizer
from tests.insert._rag import make_rag, user_prompts

PLAIN = " ".join(f"Sentence {i} mentions Alice Smith and the Acme Corp office in Berlin." for i in range(120))
TABLE = ("<table><tr><th>Company</th><th>2024-Q3 revenue</th></tr>"
         "<tr><td>Apple</td><td>39.3 billion USD</td></tr><tr><td>Microsoft</td><td>65.6 billion USD</td></tr>"
         "</table>")
WITH_TABLE = ("Quarterly results of Apple and Microsoft follow. " * 5 + TABLE
              + " Analysts at Goldman Sachs commented on the results. " * 5)
EXTRACTION_MARKER = "---Input Text---"


def test_prism_chunker_identical_to_lightrag_default_without_tables(scripted_server, tmp_path):
    rag = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path))
    tok = offline_tokenizer()
    for args in ((None, False, 100, 200), ("\n", False, 20, 120), (". ", True, 0, 1200)):
        ours = rag.chunking_func(tok, PLAIN, *args)
        stock = chunking_by_token_size(tok, PLAIN, *args)
        assert [(c["content"], c["tokens"], c["chunk_order_index"]) for c in ours] == [
            (c["content"], c["tokens"], c["chunk_order_index"]) for c in stock]


@pytest.mark.asyncio
async def test_plain_text_insert_stores_the_same_chunks_as_lightrag(scripted_server, tmp_path):
    from lightrag import LightRAG

    stock = LightRAG(**lightrag_kwargs(scripted_server, tmp_path / "stock", chunk_token_size=200,
                                       chunk_overlap_token_size=20))
    await stock.initialize_storages()
    prism = await make_rag(scripted_server, tmp_path / "prism", chunk_token_size=200, chunk_overlap_token_size=20)
    for rag in (stock, prism):
        await rag.ainsert(PLAIN, ids=["doc-plain"])
    n = (await stock.doc_status.get_by_id("doc-plain"))["chunks_count"]
    ids = [f"doc-plain-chunk-{i:03d}" for i in range(n)]
    ours, theirs = await prism.text_chunks.get_by_ids(ids), await stock.text_chunks.get_by_ids(ids)
    assert n > 3 and [c["content"] for c in ours] == [c["content"] for c in theirs]
    for rag in (stock, prism):
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_table_stays_whole_and_only_table_chunks_get_table_guidance(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path, chunk_token_size=100, chunk_overlap_token_size=0)
    await rag.ainsert(WITH_TABLE, ids=["doc-t"])
    n = (await rag.doc_status.get_by_id("doc-t"))["chunks_count"]
    chunks = await rag.text_chunks.get_by_ids([f"doc-t-chunk-{i:03d}" for i in range(n)])
    tables = [c for c in chunks if "<table" in c["content"]]
    assert len(tables) == 1 and TABLE in tables[0]["content"] and tables[0]["is_table"]
    prompts = user_prompts(scripted_server, EXTRACTION_MARKER)
    assert len(prompts) == n
    guided = [p for p in prompts if TABLE_EXTRACTION_GUIDANCE.strip() in p]
    assert len(guided) == 1 and "<table>" in guided[0].rsplit(EXTRACTION_MARKER, 1)[1]
    assert "Table header cells: Company | 2024-Q3 revenue" in guided[0]
    labels = set(await rag.chunk_entity_relation_graph.get_all_labels())
    assert {"Apple", "Microsoft", "Goldman Sachs"} <= labels
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_table_chunks_fit_the_embedder(scripted_server, tmp_path):
    big = "<table>" + "".join(f"<tr><td>Row {i}</td><td>{i * 7} USD</td></tr>" for i in range(200)) + "</table>"
    kwargs = lightrag_kwargs(scripted_server, tmp_path)
    kwargs["embedding_func"].max_token_size = 300
    rag = PrismRAG(**kwargs)
    await rag.initialize_storages()
    await rag.ainsert(big, ids=["doc-big"], timestamps=["2024"])
    n = (await rag.doc_status.get_by_id("doc-big"))["chunks_count"]
    chunks = await rag.text_chunks.get_by_ids([f"doc-big-chunk-{i:03d}" for i in range(n)])
    tok = offline_tokenizer()
    assert n > 1 and all(len(tok.encode(c["content"])) <= 300 for c in chunks)
    assert all(c["content"].startswith("[Time: 2024]\n") for c in chunks)
    await rag.finalize_storages()


def test_user_chunking_func_is_kept(scripted_server, tmp_path):
    calls = []

    def mine(tokenizer, content, *args):
        calls.append(content)
        return [{"content": content, "tokens": 1, "chunk_order_index": 0}]

    rag = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path, chunking_func=mine))
    assert rag.chunking_func.prism_inner is mine and not rag.chunking_func.table_aware
    assert rag.chunking_func(offline_tokenizer(), WITH_TABLE)[0]["content"] == WITH_TABLE and calls
    off = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path / "off", table_aware_chunking=False))
    assert not off.chunking_func.table_aware
