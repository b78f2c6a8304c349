"""PrismRAG is a drop-in LightRAG: stock modes give exactly LightRAG's results; new behaviour is opt-in."""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest
from lightrag import LightRAG as StockLightRAG
from lightrag import QueryParam as StockQueryParam

import lightrag_prism
from lightrag_prism import LightRAG, LLMNotConfiguredError, PrismQueryParam, PrismRAG, QueryParam
from lightrag_prism.retrievers import MODE_MODULES
from tests.helpers import hash_embedding_func, lightrag_kwargs, without_citations

DOCS = [
    "Alice Smith works at Acme Corp in Paris. Bob Jones knows Alice Smith.",
    "Acme Corp was founded by Carol White in Berlin. Carol White studied in Paris.",
    "Bob Jones plays chess with Dave Brown at the Berlin Chess Club.",
]
STOCK_MODES = ["naive", "local", "global", "hybrid", "mix", "bypass"]


def test_public_names_are_the_prism_classes():
    assert LightRAG is PrismRAG and QueryParam is PrismQueryParam
    assert issubclass(PrismRAG, StockLightRAG) and issubclass(PrismQueryParam, StockQueryParam)


@pytest.mark.asyncio
async def test_stock_modes_return_exactly_what_lightrag_returns(scripted_server, tmp_path):
    kwargs = lightrag_kwargs(scripted_server, tmp_path)
    stock = StockLightRAG(**kwargs)
    await stock.initialize_storages()
    await stock.ainsert(DOCS, ids=["d1", "d2", "d3"])
    prism = PrismRAG(**kwargs)  # same working dir and workspace: the same storages
    await prism.initialize_storages()
    query = "Where does Alice Smith work?"
    for mode in STOCK_MODES:
        expected = await stock.aquery_data(query, StockQueryParam(mode=mode, enable_rerank=False))
        got = await prism.aquery_data(query, QueryParam(mode=mode, enable_rerank=False))
        assert without_citations(got) == expected, mode  # LightRAG's result, plus the citations (additive)
        assert all(chunk["citation"]["file"] == chunk["file_path"] for chunk in got["data"].get("chunks", []))
        if mode != "bypass":
            assert expected["status"] == "success", mode
    await stock.finalize_storages()


@pytest.mark.asyncio
async def test_unknown_mode_raises_value_error_naming_valid_modes(scripted_server, tmp_path):
    rag = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path))
    await rag.initialize_storages()
    for call in (rag.aquery, rag.aquery_data):
        with pytest.raises(ValueError) as err:
            await call("Where does Alice work?", QueryParam(mode="hyrbid"))
        for mode in lightrag_prism.valid_modes():
            assert mode in str(err.value)
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_inputs_of_the_wrong_type_fail_with_one_type_error_naming_them(scripted_server, tmp_path):
    rag = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path))
    await rag.initialize_storages()
    for bad, named in ((None, "got NoneType"), (5, "got int"), (b"bytes", "got bytes"), ({"k": "v"}, "got dict"),
                       (["fine text", None], "document 1 is NoneType")):
        with pytest.raises(TypeError, match=named):
            await rag.ainsert(bad)
    assert sum((await rag.doc_status.get_status_counts()).values()) == 0  # refused before anything was queued
    for call in (rag.aquery, rag.aquery_data):
        with pytest.raises(TypeError, match="query must be a str, got NoneType"):
            await call(None, QueryParam(mode="prism"))
    await rag.ainsert(doc for doc in DOCS[:2])  # any iterable of str, materialised once
    assert (await rag.doc_status.get_status_counts())["processed"] == 2
    await rag.finalize_storages()


@pytest.mark.parametrize("field, value, says", [
    ("top_k", "40", "top_k must be a non-negative integer, got '40'"),
    ("chunk_top_k", -1, "chunk_top_k must be a non-negative integer, got -1"),
    ("max_total_tokens", 3.5, "max_total_tokens must be a non-negative integer"),
    ("top_k", True, "top_k must be a non-negative integer, got True"),
    ("stream", "yes", "stream must be True or False"),
    ("user_prompt", 5, "user_prompt must be a string or None"),
    ("multi_hop_relevance_threshold", float("nan"), "multi_hop_relevance_threshold must be a finite number"),
    ("linking_top_k", None, "linking_top_k must be a non-negative integer, got None"),
    ("top_ppr_nodes", "5", "top_ppr_nodes must be a non-negative integer or None"),
])
def test_a_field_of_the_wrong_type_is_named_when_the_param_is_made(field, value, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        QueryParam(mode="prism", **{field: value})


def test_values_stock_lightrag_takes_are_still_taken():
    import numpy as np

    positional = ("mix", False, False, "Bullet Points", 1, np.int64(7), 0, 6000, 8000, 30000, ["k"], [], [], None,
                  False, True)
    param = QueryParam(*positional, ppr_damping=np.float32(0.5), multi_hop_relevance_threshold=-0.1,
                       top_ppr_nodes=None)
    assert (param.stream, param.top_k, param.chunk_top_k, param.include_references) == (1, 7, 0, True)


@pytest.mark.asyncio
async def test_an_index_opened_with_an_embedder_of_another_dimension_is_named(tmp_path):
    from tests.helpers import offline_tokenizer

    workspace = f"dims_{uuid.uuid4().hex[:8]}"  # one index, two instances: a fresh shared state for this test

    def offline(dim):
        return dict(working_dir=str(tmp_path), workspace=workspace, embedding_func=hash_embedding_func(dim),
                    llm_model_func=None, tokenizer=offline_tokenizer())

    built = PrismRAG(**offline(32))
    await built.initialize_storages()
    await built.ainsert(DOCS[:1])
    await built.finalize_storages()
    with pytest.raises(lightrag_prism.EmbeddingDimensionError, match=r"holds 32-dimensional vectors, but .* gives "
                                                                    r"48-dimensional ones") as err:
        PrismRAG(**offline(48))  # the file-backed vector storages load when LightRAG builds them
    assert isinstance(err.value, ValueError) and err.value.working_dir == str(tmp_path)


@pytest.mark.parametrize("opened_on", ["asyncio.run", "the current loop"])
def test_the_sync_methods_then_finalize_storages_with_asyncio_run(tmp_path, opened_on):
    """Documents and queries through the sync methods (LightRAG runs them on the thread's current loop, made if
    there is none), storages closed with ``asyncio.run``: a script or a notebook without ``await``. The tasks the
    sync calls left on their loop made ``finalize_storages`` fail ("attached to a different loop") or hang (the
    version watcher, when the storages were opened on that loop)."""
    from tests.helpers import offline_tokenizer

    rag = PrismRAG(working_dir=str(tmp_path), workspace=f"sync_{uuid.uuid4().hex[:8]}",  # a fresh shared state
                   embedding_func=hash_embedding_func(32), llm_model_func=None, tokenizer=offline_tokenizer())
    sync_loop = asyncio.new_event_loop()  # the sync calls' loop, made here so that the test can close it
    try:
        if opened_on == "asyncio.run":
            asyncio.run(rag.initialize_storages())
            asyncio.set_event_loop(sync_loop)
        else:
            asyncio.set_event_loop(sync_loop)
            sync_loop.run_until_complete(rag.initialize_storages())
        rag.insert(DOCS)
        assert rag.query_data("Where does Alice Smith work?", QueryParam(mode="prism"))["status"] == "success"
        rag.insert("Erik Lund repairs boats in Bergen.")
        asyncio.run(asyncio.wait_for(rag.finalize_storages(), timeout=60))
    finally:
        left = asyncio.all_tasks(sync_loop)  # LightRAG's own workers, as asyncio.run would end them
        for task in left:
            task.cancel()
        sync_loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        sync_loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def echo_mode(monkeypatch):
    """Register a test mode that echoes subclass fields it receives into the result metadata."""
    monkeypatch.setitem(MODE_MODULES, "echo", "tests.foundation.echo_mode")
    yield "echo"


@pytest.mark.asyncio
async def test_registered_mode_gets_every_subclass_field(scripted_server, tmp_path, echo_mode):
    rag = PrismRAG(**lightrag_kwargs(scripted_server, tmp_path))
    await rag.initialize_storages()
    await rag.ainsert(DOCS, ids=["d1", "d2", "d3"])
    param = QueryParam(mode=echo_mode, linking_top_k=17, topic_entities=["Bob Jones"], enable_rerank=False)
    data = await rag.aquery_data("Who knows Alice Smith?", param)
    assert data["status"] == "success"
    assert data["metadata"]["prism"]["seen"] == {"linking_top_k": 17, "topic_entities": ["Bob Jones"],
                                                 "only_need_context": True}
    assert data["data"]["chunks"][0]["found_by"] == "echo"
    answer = await rag.aquery_llm("Who knows Alice Smith?", param)
    assert answer["metadata"]["prism"]["seen"]["linking_top_k"] == 17
    assert answer["llm_response"]["content"]  # answered through LightRAG's naive answer path
    assert param.mode == echo_mode and not param.only_need_context  # the caller's param is not mutated
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_without_llm_retrieval_runs_offline_and_answers_explain_how_to_configure(tmp_path):
    rag = PrismRAG(working_dir=str(tmp_path), workspace="offline", embedding_func=hash_embedding_func(),
                   entity_extract_max_gleaning=0)
    assert not rag.llm_configured
    await rag.initialize_storages()
    await rag.ainsert(DOCS, ids=["d1", "d2", "d3"])  # heuristic extraction: no LLM needed
    snapshot = await rag.graph_snapshot()
    assert {"Alice Smith", "Acme Corp", "Carol White"} <= set(snapshot.node_ids)
    for mode in ["local", "global", "hybrid", "mix"]:
        data = await rag.aquery_data("Which company does Alice Smith work for?", QueryParam(mode=mode))
        assert data["status"] == "success", mode
        steps = [f["step"] for f in data["metadata"]["prism"]["fallbacks"]]
        assert steps == ["keywords"]
        assert "Alice Smith" in data["metadata"]["keywords"]["low_level"]
    with pytest.raises(LLMNotConfiguredError, match="PRISM_LLM_MODEL"):
        await rag.aquery("Which company does Alice Smith work for?", QueryParam(mode="hybrid"))
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_answer_without_llm_context_returns_the_context_with_a_note(tmp_path):
    from lightrag_prism.rag import NO_LLM_NOTE

    with pytest.raises(ValueError, match="answer_without_llm"):
        PrismRAG(working_dir=str(tmp_path), embedding_func=hash_embedding_func(), answer_without_llm="silent")
    rag = PrismRAG(working_dir=str(tmp_path), workspace="ctx", embedding_func=hash_embedding_func(),
                   answer_without_llm="context")
    await rag.initialize_storages()
    await rag.ainsert(DOCS, ids=["d1", "d2", "d3"])
    query = "Which company does Alice Smith work for?"
    for mode in ["hybrid", "naive", "prism", "hipporag"]:
        result = await rag.aquery_llm(query, QueryParam(mode=mode))
        content = result["llm_response"]["content"]
        assert content.startswith(NO_LLM_NOTE) and "Acme Corp" in content, mode
        assert result["llm_response"]["llm_generated"] is False
        assert result["metadata"]["prism"]["fallbacks"][-1]["step"] == "answer"
        assert result["metadata"]["query_mode"] == mode  # chunk-ranking modes no longer report "naive"
    assert (await rag.aquery(query, QueryParam(mode="prism"))).startswith(NO_LLM_NOTE)
    bypass = await rag.aquery_llm(query, QueryParam(mode="bypass"))
    assert bypass["llm_response"]["content"] == NO_LLM_NOTE
    await rag.finalize_storages()


def test_a_storage_whose_client_is_not_installed_names_the_extra(monkeypatch, tmp_path):
    import importlib.util

    import pytest

    from lightrag_prism import PrismRAG
    from tests.helpers import hash_embedding_func

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pgvector" else real(name, *a))
    from lightrag_prism.errors import extra_install_hint

    with pytest.raises(ImportError, match=r"PGVectorStorage needs pgvector") as refused:
        PrismRAG(working_dir=str(tmp_path), embedding_func=hash_embedding_func(), vector_storage="PGVectorStorage")
    assert str(refused.value).endswith(extra_install_hint("servers"))


def test_an_extra_is_installed_from_the_checkout_the_package_runs_from(monkeypatch, tmp_path):
    """From a source checkout (pip install -e), the command installs the extra from it; otherwise from PyPI."""
    from lightrag_prism import errors

    (tmp_path / "setup.py").write_text("")
    monkeypatch.setattr(errors, "SOURCE_CHECKOUT", tmp_path)
    assert errors.extra_install_hint("api") == f"pip install -e '{tmp_path}[api]'"
    monkeypatch.setattr(errors, "SOURCE_CHECKOUT", tmp_path / "site-packages")
    assert errors.extra_install_hint("api") == "pip install 'lightrag-prism[api]'"
