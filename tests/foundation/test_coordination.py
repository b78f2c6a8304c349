"""coordination.py: the graph version watcher (foreign changes, failures said, own changes not reloaded), the
shared lock on file storages and the pipeline turn; the replica tests (tests/storages/test_replicas.py) cover
PostgreSQL and Redis."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism import coordination
from lightrag_prism.coordination import PipelineTurn, VersionWatcher, read_version
from lightrag_prism.plugin_state import plugin_state
from tests.helpers import hash_embedding_func

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def rag(tmp_path):
    """An instance on file storages, its watcher not polling (the tests call check() themselves)."""
    instance = PrismRAG(working_dir=str(tmp_path), workspace=tmp_path.name, embedding_func=hash_embedding_func(),
                        shared_version_interval=0)
    await instance.initialize_storages()
    yield instance
    await instance.finalize_storages()


class Store:
    """A plugin state whose version record another process may change, or whose reads may fail; its shared lock
    admits one holder per name among everything using the store (as processes do)."""

    def __init__(self):
        self.token, self.fail = "", False
        self.locks: dict[str, asyncio.Lock] = {}

    def document(self, name):
        store = self

        class Document:
            async def load(self, default):
                if store.fail:
                    raise ConnectionRefusedError("server down")
                return store.token or default

            async def save(self, value):
                store.token = value
        return Document()

    def lock(self, name):
        return self.locks.setdefault(name, asyncio.Lock())


async def test_the_watcher_reloads_once_per_foreign_change_and_never_for_its_own():
    state, refreshed = Store(), []

    async def refresh():
        refreshed.append(state.token)

    watcher = VersionWatcher(state, refresh, interval=0)
    watcher.seen = await read_version(state)  # as initialize_storages does before its first build
    assert not await watcher.check() and refreshed == []
    state.token = "written-by-another-process"
    assert await watcher.check() and not await watcher.check()
    assert refreshed == ["written-by-another-process"]
    assert watcher.status()["refreshes"] == 1 and len(watcher.status()["refresh_seconds"]) == 1
    assert not await watcher.local_change()  # this process changed the graph: its own build follows, no reload
    assert state.token != "written-by-another-process" and not await watcher.check()
    state.token = "another-process-again"  # a foreign change the watcher has not seen yet...
    assert await watcher.local_change()  # ...is reported by the next local change (its build reads everything)
    assert not await watcher.check() and refreshed == ["written-by-another-process"]
    assert refreshed == ["written-by-another-process"]


async def test_a_failed_check_is_said_and_retried():
    state, attempts = Store(), []

    async def refresh():
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("graph storage gone")

    watcher = VersionWatcher(state, refresh, interval=0)
    watcher.seen = ""
    state.fail = True
    assert not await watcher.check()
    assert "could not be read" in watcher.failure and "server down" in watcher.failure
    state.fail, state.token = False, "new"
    assert not await watcher.check() and "could not reload it" in watcher.failure  # the reload failed: retried
    assert await watcher.check() and watcher.failure is None and len(attempts) == 2


async def test_the_poller_runs_in_the_background_and_stops(tmp_path):
    state, refreshed = Store(), asyncio.Event()

    async def refresh():
        refreshed.set()

    watcher = VersionWatcher(state, refresh, interval=0.01)
    watcher.seen = ""
    watcher.start()
    state.token = "changed"
    await asyncio.wait_for(refreshed.wait(), timeout=5)
    await watcher.stop()
    assert watcher._task is None


async def test_a_query_says_when_it_answered_from_a_snapshot_it_could_not_check(rag, monkeypatch):
    await rag.ainsert("Marta Olvide was born in Vexholm, a port city in Norway.")
    question, param = "Where was Marta Olvide born?", PrismQueryParam(mode="prism")

    async def unreadable(state):
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(coordination, "read_version", unreadable)
    await rag.version_watcher.check()
    result = await rag.aquery_data(question, param)
    assert result["data"]["chunks"]  # answered, from the last snapshot ...
    fallbacks = [f for f in result["metadata"]["prism"]["fallbacks"] if f["step"] == "freshness"]
    assert len(fallbacks) == 1 and "connection reset by peer" in fallbacks[0]["reason"]  # ... and said so
    monkeypatch.undo()
    await rag.version_watcher.check()
    result = await rag.aquery_data(question, param)
    assert not [f for f in result["metadata"]["prism"]["fallbacks"] if f["step"] == "freshness"]


async def test_every_graph_change_publishes_a_new_version(rag):
    state, seen = plugin_state(rag), []
    await rag.ainsert("Marta Olvide was born in Vexholm.", ids=["d1"])
    seen.append(await read_version(state))
    await rag.acreate_entity("Port Lind", {"entity_type": "location", "description": "a port city"})
    seen.append(await read_version(state))
    await rag.adelete_by_doc_id("d1")
    seen.append(await read_version(state))
    await rag.chunk_entity_relation_graph.drop()  # what LightRAG Server's clear does
    seen.append(await read_version(state))
    assert all(seen) and len(set(seen)) == 4
    assert rag.version_watcher.seen == seen[-1]  # its own changes: nothing to reload


async def test_the_shared_lock_on_file_storages_admits_one_holder_at_a_time(rag):
    inside, most = 0, 0

    async def hold():
        nonlocal inside, most
        async with plugin_state(rag).lock("merge"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(hold() for _ in range(5)))
    assert most == 1


async def test_pipeline_turns_admit_one_run_at_a_time_among_processes_and_tasks():
    state, inside, most, order = Store(), 0, 0, []
    processes = [PipelineTurn(state), PipelineTurn(state)]

    async def run(turn, name):
        nonlocal inside, most
        async with turn():
            inside += 1
            most = max(most, inside)
            order.append(name)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(run(processes[i % 2], i) for i in range(6)))
    assert most == 1 and sorted(order) == list(range(6))


async def test_a_turn_is_reentrant_for_the_task_holding_it_and_no_longer():
    state = Store()
    turn, other = PipelineTurn(state), PipelineTurn(state)
    later: list[asyncio.Task] = []
    entered = []

    async def after_the_turn():  # started inside the turn, runs after it: it must wait like anyone else
        await asyncio.sleep(0.02)
        async with turn():
            entered.append("late task")

    async def holder():
        async with turn():
            async with turn():  # a delete handing queued documents to a pipeline run, in the same task
                entered.append("nested")
            later.append(asyncio.get_running_loop().create_task(after_the_turn()))

    async def next_holder():
        await asyncio.sleep(0.01)
        async with other():
            entered.append("next holder")
            await asyncio.sleep(0.05)
            assert entered == ["nested", "next holder"]  # the late task waits for this turn to end

    await asyncio.wait_for(asyncio.gather(holder(), next_holder()), 5)
    await asyncio.wait_for(later[0], 5)
    assert entered == ["nested", "next holder", "late task"]


async def test_a_delete_hands_documents_queued_meanwhile_to_a_pipeline_run_in_its_own_turn(rag, monkeypatch):
    await rag.ainsert("Marta Olvide was born in Vexholm.", ids=["d1"])
    await rag.apipeline_enqueue_documents("Port Lind is a city on the coast of Vexholm.", ids=["queued"])
    runs = []
    run = type(rag).apipeline_process_enqueue_documents

    async def spy(self, *args, **kwargs):
        runs.append(kwargs.get("_holding_busy", False))
        return await run(self, *args, **kwargs)

    monkeypatch.setattr(type(rag), "apipeline_process_enqueue_documents", spy)
    await asyncio.wait_for(rag.adelete_by_doc_id("d1"), 60)  # no deadlock on its own turn
    assert runs == [True]  # LightRAG's hand-off, inside the delete
    assert (await rag.doc_status.get_by_id("queued"))["status"] == "processed"
    assert await rag.doc_status.get_by_id("d1") is None
