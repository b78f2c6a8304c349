"""Every mode and the offline insert features on server-backed LightRAG storages (Redis; PostgreSQL + pgvector),
against the default file storages on the same data: the same rankings. Then a kill -9 after the insert and a
restart: nothing is re-embedded or rebuilt by the first query.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism.citations.layout import mark_pages, page_marker
from lightrag_prism.eval.datasets import load_2wiki_corpus
from lightrag_prism.retrievers import valid_modes
from tests.helpers import dense_hash_embedding_func
from tests.storages.servers import STACKS, server_stack_env
from tests.storages.stack_worker import QUERY_MODES, corpus

ROOT = Path(__file__).resolve().parents[2]
MODES = [m for m in valid_modes() if m != "bypass"]
TABLE_DOC = ("Quarterly revenue of Zorblax Corp.\n<table><tr><th>Quarter</th><th>Revenue</th></tr>"
             "<tr><td>Q1 2024</td><td>12.5</td></tr><tr><td>Q2 2024</td><td>14.1</td></tr></table>\n"
             "Zorblax Corp is based in Kestrel Bay.")
PAGED_DOC = "# Kestrel Bay\nZorblax Corp opened a plant in Kestrel Bay.\f## Plant\nThe plant makes forty pumps a day."
QUESTIONS = ["Who directed the film?", "Where was the composer born?", "What is the revenue of Zorblax Corp?"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    root = tmp_path_factory.mktemp("servers")
    with server_stack_env(root) as env:
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield env
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


# The embedder gives each word a dense vector: with the sparse hashed bag of words, entities whose texts differ
# only in a name the query lacks tied exactly, and one sat at 0.2005 against LightRAG's 0.2 vector threshold, where
# pgvector's and numpy's arithmetic disagree; each backend then kept its own tie order and cut (the stock modes
# carry no score to tell a tie from an order). The comparison stays exact.
async def index_and_rank(stack: str | None, working_dir: Path) -> dict:
    rag = PrismRAG(working_dir=str(working_dir), workspace=f"w{uuid.uuid4().hex[:8]}",
                   embedding_func=dense_hash_embedding_func(), **(STACKS[stack] if stack else {}))
    await rag.initialize_storages()
    try:
        texts, ids = corpus()
        stamps = ["2001-01-01"] * len(texts) + ["2024-07-01"]
        await rag.ainsert(texts + [TABLE_DOC], ids=ids + ["table"], timestamps=stamps)
        await rag.ainsert(PAGED_DOC, ids="paged", file_paths="kestrel.pdf")
        rankings, citations = {}, set()
        for question in QUESTIONS:
            for mode in MODES:
                result = await rag.aquery_data(question, PrismQueryParam(mode=mode, enable_rerank=False))
                assert result["status"] == "success", (stack, mode, result.get("message"))
                rankings[question, mode] = [(c["chunk_id"], c.get("score")) for c in result["data"]["chunks"]]
                citations.update((c["chunk_id"], json.dumps(c["citation"])) for c in result["data"]["chunks"])
        table_chunks = [c for c in await rag.text_chunks.get_by_ids(
            (await rag.doc_status.get_by_id("table"))["chunks_list"]) if c]
        paged = [c for c in await rag.text_chunks.get_by_ids((await rag.doc_status.get_by_id("paged"))["chunks_list"])]
        return {"rankings": rankings, "table_chunks": [c["content"] for c in table_chunks], "citations": citations,
                "paged": [c["heading"] for c in paged],
                "labels": sorted(await rag.chunk_entity_relation_graph.get_all_labels())}
    finally:
        await rag.finalize_storages()


@pytest.mark.parametrize("stack", list(STACKS))
def test_every_mode_ranks_as_on_the_file_stack(servers, stack, tmp_path):
    files = asyncio.run(index_and_rank(None, tmp_path / "files"))
    served = asyncio.run(index_and_rank(stack, tmp_path / "served"))
    assert served["labels"] == files["labels"]
    for key, ranking in files["rankings"].items():
        assert ranking, key
        assert same_ranking(served["rankings"][key], ranking), (key, served["rankings"][key], ranking)
    # citations (kept in the chunk's heading record: PostgreSQL's JSONB column, Redis's JSON) as on files
    assert served["citations"] == files["citations"] and served["paged"] == files["paged"]
    assert served["paged"] == [{"level": 1, "heading": "Kestrel Bay", "parent_headings": [], "pages": [1, 2],
                                "span": [len(page_marker(1)) + 1, len(mark_pages(PAGED_DOC))]}]
    # insert features on the stack: the table kept whole in one chunk, the timestamp header on it
    assert any("<table>" in c and "</table>" in c and c.startswith("[Time: 2024-07-01]") for c in served["table_chunks"])


# Two backends store the same float32 vectors but compute similarities in their own float arithmetic: scores
# agree to about 1e-6, so two passages whose scores differ by less than this may come in either order.
SCORE_TOLERANCE = 1e-4


def same_ranking(got: list[tuple], expected: list[tuple]) -> bool:
    """The same passages in the same order, except neighbours whose scores are within SCORE_TOLERANCE."""
    if [i for i, _ in got] == [i for i, _ in expected]:
        return True
    score_of = dict(expected)
    if len(got) != len(expected) or set(score_of) != {i for i, _ in got} or None in score_of.values():
        return False
    return all(abs(score_of[g] - e_score) <= SCORE_TOLERANCE * max(1.0, abs(e_score))
               for (g, _), (_, e_score) in zip(got, expected))


def run_worker(action: str, stack: str, working_dir: Path, workspace: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.storages.stack_worker", action, stack, str(working_dir),
                           workspace], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize("stack", list(STACKS))
def test_restart_after_kill_rebuilds_nothing(servers, stack, tmp_path):
    workspace = f"r{uuid.uuid4().hex[:8]}"
    inserted = run_worker("insert", stack, tmp_path, workspace)
    assert inserted.returncode == -9 and "inserted" in inserted.stdout, inserted.stderr[-2000:]
    queried = run_worker("query", stack, tmp_path, workspace)
    assert queried.returncode == 0, queried.stderr[-2000:]
    report = json.loads(queried.stdout.strip().splitlines()[-1])
    for mode in QUERY_MODES:
        first, warm = report[f"first/{mode}"], report[f"warm/{mode}"]
        assert first["embedded"] == warm["embedded"], (mode, report)  # a first query embeds what a warm one does:
        if mode in ("prism", "hipporag", "naive"):  # the question only (hybrid: LightRAG embeds its keywords too)
            assert first["embedded"] == 1, (mode, report)
    # one snapshot build for the restarted process (the graph is read once), none for a warm query
    assert sum(report[f"first/{m}"]["snapshots"] for m in QUERY_MODES) <= 1
    assert all(report[f"warm/{m}"]["snapshots"] == 0 for m in QUERY_MODES)


def test_a_patched_snapshot_equals_a_whole_read_on_postgresql(servers, tmp_path):
    """The snapshot patched from the change log (snapshot.patch_snapshot) against one read whole, through random
    writes on PGTableGraphStorage (its batch reads, its own edge orientation) and a document inserted and deleted."""
    import random

    from lightrag_prism.snapshot import build_snapshot
    from tests.foundation.test_snapshot_patch import assert_same, random_writes

    async def run():
        rag = PrismRAG(working_dir=str(tmp_path), workspace=f"p{uuid.uuid4().hex[:8]}",
                       embedding_func=dense_hash_embedding_func(), **STACKS["postgres"])
        await rag.initialize_storages()
        graph, rng = rag.chunk_entity_relation_graph, random.Random(3)
        try:
            texts, ids = corpus()
            await rag.ainsert(texts[:4], ids=ids[:4])
            for step in range(40):
                if step == 20:
                    await rag.adelete_by_doc_id(ids[0])
                else:
                    await random_writes(graph, rng, step)
                rag.invalidate_snapshot()
                snapshot = await rag.graph_snapshot()
                assert_same(snapshot, build_snapshot(await graph.get_all_nodes(), await graph.get_all_edges()))
            assert rag._snapshots.patches >= 30
        finally:
            await rag.finalize_storages()

    asyncio.run(run())


def test_the_passage_view_lists_processed_chunks_on_postgresql_without_reading_whole_statuses(servers, tmp_path):
    """patches/pg_reads.py gives what get_docs_by_statuses([PROCESSED]) gives, and the passage view uses it."""
    from lightrag.base import DocStatus

    from lightrag_prism.patches import pg_reads
    from lightrag_prism.retrievers.views.passage_graph import all_passage_ids

    async def run():
        rag = PrismRAG(working_dir=str(tmp_path), workspace=f"c{uuid.uuid4().hex[:8]}",
                       embedding_func=dense_hash_embedding_func(), **STACKS["postgres"])
        await rag.initialize_storages()
        try:
            texts, ids = corpus()
            await rag.ainsert(texts[:5], ids=ids[:5])
            await rag.adelete_by_doc_id(ids[0])
            docs = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
            public = [chunk for status in docs.values() for chunk in status.chunks_list or []]
            fast = await pg_reads.processed_chunk_lists(rag.doc_status, DocStatus.PROCESSED.value)
            assert len(docs) == 4 and public and sorted(fast) == sorted(public)

            async def whole_read(*args, **kwargs):
                raise AssertionError("the passage view read every document status")

            rag.doc_status.get_docs_by_statuses = whole_read
            snapshot = await rag.graph_snapshot()
            assert set(await all_passage_ids(rag, snapshot)) == set(snapshot.chunk_ids) | set(public)
        finally:
            await rag.finalize_storages()

    asyncio.run(run())


def test_the_postgresql_chunk_list_read_declines_other_backends_and_unknown_schemas():
    from lightrag_prism.patches import pg_reads

    class PGDocStatusStorage:  # the name alone is not enough: the module must be LightRAG's
        pass

    assert asyncio.run(pg_reads.processed_chunk_lists(PGDocStatusStorage(), "processed")) is None

    class FailingDB:
        async def query(self, *args, **kwargs):
            raise RuntimeError('column "chunks_list" does not exist')

    PGDocStatusStorage.__module__ = "lightrag.kg.postgres_impl"  # LightRAG's class on a schema this does not know
    storage = PGDocStatusStorage()
    storage.db, storage.workspace = FailingDB(), "w"
    assert asyncio.run(pg_reads.processed_chunk_lists(storage, "processed")) is None
