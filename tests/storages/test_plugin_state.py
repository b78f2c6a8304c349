"""The plugin's own state (merge log, plans, aliases, timestamps, entity types, name and fact vectors) lives in
LightRAG storages of the configured backend: written by one instance, seen by a second replica that shares only the
servers (its own working dir, holding a copy of the NetworkX graph and nothing else); legacy working-dir files are
moved into the storages on first start."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import numpy as np
import pytest

from lightrag_prism import PrismRAG
from lightrag_prism.insert.merging.agentic import open_merge_state
from lightrag_prism.insert.pipeline import content_key
from lightrag_prism.insert.merging.rebuild import load_aliases
from lightrag_prism.insert.state_migration import LEGACY_DOCUMENTS
from lightrag_prism.plugin_state import plugin_state
from lightrag_prism.retrievers.views.passage_graph import FACT_INDEX, hippo_state
from tests.helpers import hash_embedding_func, lightrag_kwargs
from tests.insert.test_entity_types_integration import ANSWER, DOCS, TYPE_MARKER
from tests.insert.test_merging_integration import ACME, D1, D2, JUDGE_MARKER, judge
from tests.storages.servers import STACKS
from tests.storages.test_server_backed import run_worker, servers  # noqa: F401  (the module's server fixture)

pytestmark = pytest.mark.asyncio
STATE_FILES = ("prism_", "hipporag_")  # what earlier versions wrote in the working dir


def _stack_kwargs(stack: str | None) -> dict:
    return STACKS[stack] if stack else {}


async def _writer(server, working_dir: Path, workspace: str, stack: str | None) -> PrismRAG:
    rag = PrismRAG(**lightrag_kwargs(server, working_dir, workspace=workspace, embedding_func=hash_embedding_func(),
                                     **_stack_kwargs(stack)))
    await rag.initialize_storages()
    return rag


async def _write_every_kind_of_state(rag: PrismRAG, server) -> None:
    server.script(TYPE_MARKER, json.dumps(ANSWER))
    server.script(JUDGE_MARKER, judge(ACME))
    await rag.aentity_type_aug(texts=DOCS)
    await rag.ainsert(D1, ids=["d1"], timestamps=["2001-05-01"])
    await rag.ainsert(D2, ids=["d2"], agentic_merging=True, agentic_merging_threshold=0.5)


@pytest.mark.parametrize("stack", list(STACKS))
async def test_a_second_replica_sees_the_state_through_the_servers(servers, scripted_server, stack,  # noqa: F811
                                                                  tmp_path):
    workspace = f"s{uuid.uuid4().hex[:8]}"
    rag = await _writer(scripted_server, tmp_path / "a", workspace, stack)
    try:
        await _write_every_kind_of_state(rag, scripted_server)
        assert rag.last_merge_report["clusters"], rag.last_merge_report
        files = [p.name for p in (tmp_path / "a").rglob("*") if p.name.startswith(STATE_FILES)]
        assert files == []  # nothing of the plugin's in the working dir
        if stack == "postgres":  # in LightRAG's cache table, under its own workspace: clearing the cache keeps it
            await rag.aclear_cache()
            assert await load_aliases(plugin_state(rag)) == {"Acme Corp": "Acme Corporation"}
    finally:
        await rag.finalize_storages()
    (tmp_path / "b").mkdir()  # a working dir of its own: the replica shares only the servers
    done = run_worker("state", stack, tmp_path / "b", workspace)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "- FinancialMetric:" in seen["guidance"]
    assert ["Acme Corp", "Acme Corporation", "merge"] in seen["decisions"]
    assert seen["aliases"] == {"Acme Corp": "Acme Corporation"}
    assert seen["timestamps"] == {content_key(D1): "2001-05-01"}
    assert seen["chunks"] and seen["vectors_loaded"] > 0
    assert seen["first_query_embedded"] == 1  # the question: every name and fact vector came from the store


async def _write_legacy_files(folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    legacy = {
        "prism_merge_log.json": {"version": 1, "decisions": [], "journal": [
            {"cluster_id": "c0", "members": ["A", "B"], "canonical": "A", "state": "done", "started_at": 1.0,
             "completed_at": 2.0}]},
        "prism_merge_plans.json": {},
        "prism_entity_aliases.json": {"B": "A"},
        "prism_doc_timestamps.json": {content_key("an old document"): "1999"},
        "prism_entity_types.json": {"base_guidance": "- Person: a person", "discovered": [],
                                    "guidance": "- Person: a person\n- Ship: a vessel", "analysed": []},
    }
    for name, value in legacy.items():
        (folder / name).write_text(json.dumps(value))
    vectors = np.eye(3, 8, dtype=np.float32)
    np.savez(folder / f"{FACT_INDEX}.npz", vectors=vectors)
    (folder / f"{FACT_INDEX}.json").write_text(json.dumps(["f0", "f1", "f2"]))
    return {"documents": legacy, "vectors": vectors}


@pytest.mark.parametrize("stack", [None, *STACKS])
async def test_legacy_working_dir_files_are_moved_into_the_storages(servers, stack, tmp_path):  # noqa: F811
    workspace = f"m{uuid.uuid4().hex[:8]}"
    legacy = await _write_legacy_files(tmp_path / workspace)
    rag = PrismRAG(working_dir=str(tmp_path), workspace=workspace, embedding_func=hash_embedding_func(),
                   prepare_query_indexes=False, **_stack_kwargs(stack))
    await rag.initialize_storages()
    try:
        state = plugin_state(rag)
        for filename, name in LEGACY_DOCUMENTS.items():
            assert await state.document(name).load(None) == legacy["documents"][filename], filename
            assert not (tmp_path / workspace / filename).exists()
            assert (tmp_path / workspace / f"{filename}.migrated").exists()  # kept for a way back
        stored = await state.vectors.get(FACT_INDEX, ["f0", "f1", "f2"])
        np.testing.assert_array_equal(np.stack([stored[f] for f in ("f0", "f1", "f2")]), legacy["vectors"])
        assert rag.addon_params["entity_types_guidance"].endswith("- Ship: a vessel")  # restored after the move
        assert await load_aliases(state) == {"B": "A"}
        assert hippo_state(rag).fact_index.ids == []  # vectors are read when an index asks for them
    finally:
        await rag.finalize_storages()


async def test_a_damaged_legacy_merge_log_stops_the_start_with_its_path(tmp_path):
    (tmp_path / "prism_merge_log.json").write_text("{torn")
    rag = PrismRAG(working_dir=str(tmp_path), workspace="", embedding_func=hash_embedding_func())
    with pytest.raises(ValueError, match="prism_merge_log.json"):
        await rag.initialize_storages()
    assert (tmp_path / "prism_merge_log.json").exists()  # left in place for the user to fix


async def test_an_instance_that_was_never_opened_says_so(tmp_path):
    rag = PrismRAG(working_dir=str(tmp_path), embedding_func=hash_embedding_func())
    with pytest.raises(RuntimeError, match="initialize_storages"):
        await open_merge_state(rag)


@pytest.mark.parametrize("stack", [None, "postgres"])
async def test_dropping_the_graph_clears_derived_state_and_keeps_entity_types(servers, scripted_server, stack,  # noqa: F811
                                                                              tmp_path):
    rag = await _writer(scripted_server, tmp_path, f"c{uuid.uuid4().hex[:8]}", stack)
    try:
        await _write_every_kind_of_state(rag, scripted_server)
        state, facts = plugin_state(rag), list(hippo_state(rag).fact_index.ids)
        assert facts and await state.vectors.get(FACT_INDEX, facts)
        await rag.chunk_entity_relation_graph.drop()  # what LightRAG Server's "clear documents" does, among others
        for name in ("merge_log", "merge_plans", "aliases", "doc_timestamps_used",
                     f"doc_timestamp:{content_key(D1)}"):
            assert await state.document(name).load(None) is None, name
        assert await state.vectors.get(FACT_INDEX, facts) == {}
        assert rag.prism_seam.insert_hooks.timestamps == {}
        assert "FinancialMetric" in (await state.document("entity_types").load(None))["guidance"]  # kept
        asked = len(scripted_server.chat_requests())
        await rag.aentity_type_aug(texts=DOCS, force_refresh=True)
        assert len(scripted_server.chat_requests()) == asked  # LightRAG's own LLM cache was left alone
    finally:
        await rag.finalize_storages()


class FlushCountingStore:
    """A KV store's write methods and flush, counting flushes; a flush waits for ``release`` and fails with ``fail``."""

    def __init__(self):
        self.rows, self.flushes, self.fail = {}, 0, False
        self.release = asyncio.Event()
        self.release.set()

    async def upsert(self, data):
        self.rows.update(data)

    async def delete(self, ids):
        for key in ids:
            self.rows.pop(key, None)

    async def index_done_callback(self):
        await self.release.wait()
        if self.fail:
            raise OSError("disk full")
        self.flushes += 1


async def test_index_updates_inside_one_flush_share_a_single_flush():
    from lightrag_prism.plugin_state import KVVectors, VectorCache

    store = FlushCountingStore()
    cache = VectorCache(KVVectors(store))
    vec = np.ones(4, np.float32)
    await cache.update("names", {"a": vec})
    assert store.flushes == 1  # alone: flushed at once
    async with cache.one_flush():
        await cache.update("names", {"b": vec}, dropped=["a"])
        await cache.update("facts", {"f": vec})
        await cache.update("facts", {})  # nothing changed
        assert store.flushes == 1
    assert store.flushes == 2 and len(store.rows) == 2  # names:b and facts:f
    async with cache.one_flush():
        pass
    assert store.flushes == 2  # nothing written: no flush


async def test_a_flush_left_behind_runs_after_the_block_and_settle_waits_for_it(caplog):
    from lightrag_prism.plugin_state import KVVectors, VectorCache

    store = FlushCountingStore()
    store.release.clear()  # flushes wait until released
    cache = VectorCache(KVVectors(store))
    vec = np.ones(4, np.float32)
    async with cache.one_flush(behind=True):
        await cache.update("names", {"a": vec})
    assert store.flushes == 0 and store.rows  # the block returned before its flush; the rows are written
    store.release.set()
    await cache.settle()
    assert store.flushes == 1
    store.release.clear()
    store.fail = True
    async with cache.one_flush(behind=True):
        await cache.update("names", {"b": vec})
    store.release.set()
    await cache.settle()  # a failed flush is logged, not raised, and the next block flushes again
    assert "could not be flushed: disk full" in caplog.text and store.flushes == 1
    store.fail = False
    async with cache.one_flush():
        pass
    assert store.flushes == 2


async def test_settle_flushes_itself_what_a_closed_loops_flush_never_wrote():
    """A query's flush left behind on a loop that was then closed (a sync call's, closed by its owner) can never
    run: settling neither waits for it forever nor drops it, it flushes on the loop it runs on."""
    from lightrag_prism.plugin_state import KVVectors, VectorCache

    class Store:
        flushes = 0

        async def index_done_callback(self):
            Store.flushes += 1

    cache = VectorCache(KVVectors(Store()))
    gone = asyncio.new_event_loop()
    stranded = gone.create_task(asyncio.sleep(3600))  # made, never run: as a flush of a loop closed at once
    cache._behind.add(stranded)
    gone.close()
    await asyncio.wait_for(cache.settle(), timeout=5)
    assert Store.flushes == 1 and not cache._behind
    stranded._log_destroy_pending = False  # asyncio's notices of a task and a coroutine that never ran: the point
    stranded.get_coro().close()


async def test_settle_returns_when_a_flush_has_ended_but_its_callback_has_not_run():
    """A flush that has just ended stays in the cache's set until its done callback runs on the next loop turn.
    Settling then must not spin on it: it used to wait on nothing, never yield to the loop, and so never end (a
    CI run hung in ``finalize_storages``). Run on a loop of its own in a thread, so a regression fails here."""
    import threading

    from lightrag_prism.plugin_state import KVVectors, VectorCache

    class Store:
        async def index_done_callback(self):
            pass

    outcome = {}

    async def settle_after_an_ended_flush():
        cache = VectorCache(KVVectors(Store()))
        flush = asyncio.get_running_loop().create_future()
        cache._behind.add(flush)
        flush.add_done_callback(cache._behind.discard)
        flush.set_result(None)  # done; the discard is only scheduled
        outcome["callback ran before settle"] = flush not in cache._behind
        await cache.settle()
        outcome["left"] = len(cache._behind)

    thread = threading.Thread(target=asyncio.run, args=(settle_after_an_ended_flush(),), daemon=True)
    thread.start()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive(), "settle spun on a flush that had ended"
    assert outcome == {"callback ran before settle": False, "left": 0}
