"""Replicas over shared storages (the whole state on PostgreSQL, or Redis + PostgreSQL): every mode of one replica
sees the other's inserts and deletes, and concurrent writers lose nothing (``coordination.py``).

Each replica is its own process with its own working dir; they share only the servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from lightrag_prism.insert.pipeline import content_key
from lightrag_prism.insert.timestamps.store import lookup
from lightrag_prism.plugin_state import plugin_state
from tests.insert._rag import assert_graph_consistent
from tests.insert.test_merging_integration import JUDGE_MARKER, judge
from tests.storages.replica_worker import MODES, replica
from tests.storages.servers import STACKS, postgres_env, postgres_server, start_postgres
from tests.storages.stack_worker import corpus
from tests.storages.test_server_backed import servers  # noqa: F401  (the module's server fixture)

pytestmark = pytest.mark.asyncio
ROOT = Path(__file__).resolve().parents[2]
NEW_PASSAGE = "The Blue River flows through Townsville and into Lake Marrow."
QUESTION = "Which river flows through Townsville?"
MARKER = "Blue River flows through Townsville"
# Generous: the replica polls every 0.5 s and rebuilds in well under a second here; benchmarks/bench_replicas.py
# measures the staleness itself.
TIMEOUT = 60


async def start_worker(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storages.replica_worker", *args, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


READ_TIMEOUT = 300  # seconds a worker may take to print its next line


async def read_line(process: asyncio.subprocess.Process) -> str:
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=READ_TIMEOUT)
    except asyncio.TimeoutError:  # a hang: report where each of the worker's tasks waits (replica_worker.dump_tasks)
        process.send_signal(signal.SIGUSR1)
        await asyncio.sleep(2)
        process.kill()
        await process.wait()
        raise AssertionError(f"no answer in {READ_TIMEOUT} s; the worker's tasks:\n"
                             + (await process.stderr.read()).decode()[-20000:]) from None
    if not line:
        await process.wait()
        raise AssertionError((await process.stderr.read()).decode()[-3000:])
    return line.decode().strip()


async def ask(process: asyncio.subprocess.Process, expect: str) -> dict:
    command = {"expect": expect, "query": QUESTION, "marker": MARKER, "timeout": TIMEOUT}
    process.stdin.write((json.dumps(command) + "\n").encode())
    await process.stdin.drain()
    return json.loads(await read_line(process))


@contextlib.asynccontextmanager
async def workers(*commands: tuple[str, ...], env: dict[str, str] | None = None):
    """Start one replica process per command; kill any still running when the test ends (pass or fail)."""
    processes = [await start_worker(*command, env=env) for command in commands]
    try:
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def finish(process: asyncio.subprocess.Process) -> None:
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), timeout=120) == 0, (await process.stderr.read()).decode()[-3000:]


@pytest.mark.parametrize("stack", list(STACKS))
async def test_every_mode_of_a_replica_sees_the_other_replicas_insert_and_delete(servers, stack,  # noqa: F811
                                                                                 tmp_path):
    workspace = f"f{uuid.uuid4().hex[:8]}"
    writer = replica(stack, str(tmp_path / "a"), workspace)
    await writer.initialize_storages()
    try:
        texts, ids = corpus()
        await writer.ainsert(texts, ids=ids)
        async with workers(("watch", stack, str(tmp_path / "b"), workspace)) as (reader,):
            assert await read_line(reader) == "ready"

            await writer.ainsert(NEW_PASSAGE, ids=["blue"])
            seen = await ask(reader, "present")
            assert sorted(seen["seconds"]) == sorted(MODES), seen  # every mode found the other replica's passage
            assert seen["stable"] and seen["refreshes"] >= 1 and seen["failure"] is None, seen

            await writer.adelete_by_doc_id("blue")
            gone = await ask(reader, "absent")
            assert sorted(gone["seconds"]) == sorted(MODES), gone
            assert gone["stable"], gone  # and never returned again
            await finish(reader)
    finally:
        await writer.finalize_storages()


@pytest.mark.parametrize("stack", list(STACKS))
async def test_two_replicas_inserting_timestamped_documents_at_once_keep_every_timestamp(servers, stack,  # noqa: F811
                                                                                         tmp_path):
    workspace, n = f"t{uuid.uuid4().hex[:8]}", 100
    rag = replica(stack, str(tmp_path / "check"), workspace)
    await rag.initialize_storages()  # the schema exists before the replicas start (see docs/scale-out.md)
    try:
        async with workers(*[("timestamps", stack, str(tmp_path / side), workspace, side, str(n))
                             for side in ("left", "right")]) as inserting:
            for worker in inserting:
                assert await read_line(worker) == "done []"  # neither resumed the other's documents in flight
                await finish(worker)
        state = plugin_state(rag)
        for side in ("left", "right"):
            for i in range(n):
                text = f"{side} document number {i} records the harvest of year {1900 + i}."
                assert await lookup(state, content_key(text)) == f"{1900 + i}-01-01", (side, i)
                chunk = await rag.text_chunks.get_by_id(f"{side}-{i}-chunk-000")
                assert chunk is not None, (side, i)  # processed, by whichever replica's pipeline took it
                assert chunk["content"].startswith(f"[Time: {1900 + i}-01-01]\n"), (side, i, chunk["content"])
    finally:
        await rag.finalize_storages()


async def test_replicas_starting_together_on_a_fresh_database_both_come_up(servers, tmp_path):  # noqa: F811
    with postgres_server(tmp_path / "fresh") as fresh:  # no LightRAG table yet
        async with workers(*[("timestamps", "postgres", str(tmp_path / side), "fresh", side, "5")
                             for side in ("left", "right")], env=fresh) as starting:
            for worker in starting:
                assert (await read_line(worker)).startswith("done")  # neither failed on creating the tables
                await finish(worker)


async def test_a_replica_that_loses_postgresql_fails_clearly_and_recovers_by_itself(tmp_path):
    server = start_postgres(tmp_path / "pg")
    # LightRAG's own retries, shortened (its defaults wait minutes for a switchover before giving up)
    env = {**postgres_env(server), "POSTGRES_CONNECTION_RETRIES": "2", "POSTGRES_CONNECTION_RETRY_BACKOFF": "0.1",
           "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "0.2"}
    try:
        async with workers(("outage", "postgres", str(tmp_path / "w"), "outage"), env=env) as (replica_process,):
            assert await read_line(replica_process) == "ready"
            server.cleanup()  # the database goes away between two queries
            replica_process.stdin.write(b"down\n")
            await replica_process.stdin.drain()
            down = json.loads(await read_line(replica_process))
            for mode, outcome in down.items():
                assert outcome["error"] == "StorageUnavailableError", (mode, outcome)
                assert outcome["message"].startswith("the PG") and "is unreachable" in outcome["message"], outcome
                assert "\n" not in outcome["message"], outcome  # one line, no driver traceback
            server = start_postgres(tmp_path / "pg")  # back, on the same data
            replica_process.stdin.write(b"up\n")
            await replica_process.stdin.drain()
            up = json.loads(await read_line(replica_process))
            assert all(outcome.get("found") for outcome in up.values()), up  # reconnected, nothing lost
            await finish(replica_process)
    finally:
        server.cleanup()


@pytest.mark.parametrize("stack", list(STACKS))  # the lock: a PostgreSQL advisory lock, a Redis lock
async def test_two_replicas_merging_at_once_leave_one_consistent_graph(servers, scripted_server, stack,  # noqa: F811
                                                                       tmp_path):
    scripted_server.script(JUDGE_MARKER, judge({frozenset(("Acme Corp", "Acme Corporation")),
                                               frozenset(("Acme Corporation", "Acme Corporation Inc"))}))
    workspace = f"m{uuid.uuid4().hex[:8]}"
    rag = replica(stack, str(tmp_path / "setup"), workspace)
    await rag.initialize_storages()
    try:
        await rag.acreate_entity("Texas", {"entity_type": "location", "description": "Texas is a US state."})
        for name in ("Acme Corp", "Acme Corporation", "Acme Corporation Inc"):
            await rag.acreate_entity(name, {"entity_type": "organization",
                                            "description": f"{name} builds rockets in Texas."})
            await rag.acreate_relation(name, "Texas", {"description": f"{name} builds rockets in Texas.",
                                                      "keywords": "builds in", "weight": 1.0})
    finally:
        await rag.finalize_storages()
    async with workers(*[("merge", stack, str(tmp_path / side), workspace, scripted_server.base_url)
                         for side in ("left", "right")]) as merging:
        reports = [json.loads(await read_line(worker)) for worker in merging]
        for worker in merging:
            await finish(worker)
    merged = [members for report in reports for members in report["clusters"]]
    assert len(merged) == 1, reports  # one replica merged; the other waited, then found nothing left to merge
    assert sorted(merged[0]) == ["Acme Corp", "Acme Corporation", "Acme Corporation Inc"]
    check = replica(stack, str(tmp_path / "check"), workspace)
    await check.initialize_storages()
    try:
        labels = set(await check.chunk_entity_relation_graph.get_all_labels())
        assert labels == {"Acme Corporation", "Texas"}, labels
        await assert_graph_consistent(check)
        from lightrag_prism.insert.merging.agentic import open_merge_state

        log, plans = await open_merge_state(check)
        assert log.pending() == [] and await plans.load() == {}  # the journal is closed
    finally:
        await check.finalize_storages()
