"""A second replica for test_replicas.py: its own process and working dir, the same servers and workspace.

    python -m tests.storages.replica_worker watch STACK WORKING_DIR WORKSPACE
        prints "ready" once its instance answers every mode, then reads one JSON command per stdin line:
        {"expect": "present" | "absent", "query": ..., "marker": ..., "timeout": s} and polls every mode until
        the marker is in (or out of) its passages, prints per mode the seconds that took, then checks each mode
        again three times ("stable": it never flipped back).
    python -m tests.storages.replica_worker timestamps STACK WORKING_DIR WORKSPACE PREFIX N
        inserts N timestamped documents (ainserts of BATCH documents, all at once) and prints "done" with the
        documents its pipeline took for interrupted, in JSON (another replica's in flight, if both ran at once).
    python -m tests.storages.replica_worker outage STACK WORKING_DIR WORKSPACE
        inserts a passage and prints "ready"; then on each stdin line ("down", "up") queries prism and naive once
        ("down") or until they answer (at most 60 s, "up") and prints what happened.
    python -m tests.storages.replica_worker merge STACK WORKING_DIR WORKSPACE BASE_URL
        runs agentic merging over every entity with the scripted LLM at BASE_URL and prints its report.

The servers come from the environment (``REDIS_URI``, ``POSTGRES_*``). On SIGUSR1 a worker writes where each of
its asyncio tasks waits to stderr (``dump_tasks``): the test asks for it before killing a worker that hangs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import signal
import sys
import time

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism.retrievers import valid_modes
from tests.helpers import hash_embedding_func
from tests.storages.servers import STACKS

MODES = [m for m in valid_modes() if m != "bypass"]
POLL_SECONDS = 0.05
BATCH = 10  # documents per ainsert when inserting timestamped documents


def replica(stack: str, working_dir: str, workspace: str, **kwargs) -> PrismRAG:
    return PrismRAG(working_dir=working_dir, workspace=workspace, embedding_func=hash_embedding_func(),
                    **STACKS[stack], **kwargs)


async def holds(rag: PrismRAG, mode: str, query: str, marker: str, present: bool) -> bool:
    result = await rag.aquery_data(query, PrismQueryParam(mode=mode, enable_rerank=False))
    chunks = result.get("data", {}).get("chunks", []) if result.get("status") == "success" else []
    return any(marker in (c.get("content") or "") for c in chunks) == present


async def expect(rag: PrismRAG, command: dict) -> dict:
    present, started = command["expect"] == "present", time.monotonic()
    seconds: dict[str, float] = {}
    while len(seconds) < len(MODES) and time.monotonic() - started < command["timeout"]:
        for mode in MODES:
            if mode not in seconds and await holds(rag, mode, command["query"], command["marker"], present):
                seconds[mode] = round(time.monotonic() - started, 3)
        await asyncio.sleep(POLL_SECONDS)
    stable = [await holds(rag, mode, command["query"], command["marker"], present)
              for _ in range(3) for mode in MODES]
    return {"seconds": seconds, "stable": all(stable), "refreshes": rag.version_watcher.refreshes,
            "failure": rag.version_watcher.failure}


async def watch(stack: str, working_dir: str, workspace: str) -> None:
    rag = replica(stack, working_dir, workspace)
    await rag.initialize_storages()
    for mode in MODES:
        await rag.aquery_data("Who is there?", PrismQueryParam(mode=mode, enable_rerank=False))
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        print(json.dumps(await expect(rag, json.loads(line))), flush=True)
    await rag.finalize_storages()


class ResumedDocuments(logging.Handler):
    """Collects what LightRAG's pipeline logs when it resumes documents it found PROCESSING: nothing crashed in these
    runs, so those were another replica's documents in flight (it resets them and purges their chunks)."""

    PATTERN = re.compile(r"Reset \d+ interrupted document|\[resume\] \S+: purging")

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.PATTERN.search(message):
            self.messages.append(message)

    def install(self) -> None:
        lightrag_logger = logging.getLogger("lightrag")
        for handler in lightrag_logger.handlers:  # stderr stays as quiet as before: the test reads it on failure only
            handler.setLevel(max(handler.level, lightrag_logger.getEffectiveLevel()))
        lightrag_logger.setLevel(logging.INFO)
        lightrag_logger.addHandler(self)


async def insert_timestamped(stack: str, working_dir: str, workspace: str, prefix: str, n: str) -> None:
    rag = replica(stack, working_dir, workspace)
    resumed = ResumedDocuments()
    resumed.install()
    await rag.initialize_storages()
    batches = [range(start, min(start + BATCH, int(n))) for start in range(0, int(n), BATCH)]
    await asyncio.gather(*(rag.ainsert([f"{prefix} document number {i} records the harvest of year {1900 + i}."
                                        for i in batch], ids=[f"{prefix}-{i}" for i in batch],
                                       timestamps=[f"{1900 + i}-01-01" for i in batch]) for batch in batches))
    await rag.finalize_storages()
    print("done " + json.dumps(resumed.messages), flush=True)


async def outage(stack: str, working_dir: str, workspace: str) -> None:
    rag = replica(stack, working_dir, workspace)
    await rag.initialize_storages()
    await rag.ainsert("The Blue River flows through Townsville.", ids=["blue"])
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
        report, started = {}, time.monotonic()
        for mode in ("prism", "naive"):
            while True:
                try:
                    found = await holds(rag, mode, "Which river flows through Townsville?", "Blue River", True)
                    report[mode] = {"found": found, "seconds": time.monotonic() - started}
                    break
                except Exception as exc:  # noqa: BLE001 - what the caller sees is the report
                    report[mode] = {"error": type(exc).__name__, "message": str(exc),
                                    "seconds": time.monotonic() - started}
                    if line == "down" or time.monotonic() - started > 60:
                        break
                    await asyncio.sleep(0.2)
        print(json.dumps(report), flush=True)
    await rag.finalize_storages()


async def merge(stack: str, working_dir: str, workspace: str, base_url: str) -> None:
    from lightrag.llm.openai import openai_complete_if_cache

    async def llm(prompt, system_prompt=None, history_messages=None, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if k not in ("hashing_kv", "_priority", "_timeout",
                                                                "_queue_timeout")}
        return await openai_complete_if_cache("scripted", prompt, system_prompt=system_prompt,
                                              history_messages=history_messages or [], base_url=base_url,
                                              api_key="sk-scripted-test", **kwargs)

    rag = replica(stack, working_dir, workspace, llm_model_func=llm)
    await rag.initialize_storages()
    report = await rag.aagentic_merge(None, threshold=0.5)
    await rag.finalize_storages()
    print(json.dumps({"clusters": [c["members"] for c in report["clusters"]], "judged": report["judged"]}),
          flush=True)


def dump_tasks() -> None:
    """Write every asyncio task's stack to stderr (on SIGUSR1: the test asks for it before killing a worker that
    stopped answering, so a hang is reported with where each task waits)."""
    idle = 0
    for task in asyncio.all_tasks():
        name = task.get_coro().__qualname__
        if name == "Queue.get" or name.endswith("final_dec.<locals>.worker"):  # LightRAG's idle call-queue workers
            idle += 1
            continue
        print(f"--- {task.get_name()}: {name}", file=sys.stderr)
        task.print_stack(limit=40, file=sys.stderr)
    print(f"--- and {idle} idle LightRAG queue workers", file=sys.stderr, flush=True)


async def main(action: str, args: list[str]) -> None:
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    actions = {"watch": watch, "timestamps": insert_timestamped, "outage": outage, "merge": merge}
    await actions[action](*args)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
