"""Crash test for agentic merging: kill the process in the middle of a merge, restart, check invariants.

For each crash point the script runs two child processes on one working directory:

1. ``build``: inserts three documents (offline, through the scripted OpenAI-compatible server of the test suite),
   saves the relation set, then runs agentic merging and dies with ``os._exit(137)`` (no cleanup, no flush) at
   the crash point: ``after_begin`` (journalled, graph untouched), ``during_amerge`` (inside LightRAG's
   ``amerge_entities``, at its second edge write) or ``after_amerge`` (LightRAG's merge done, weights and
   per-document rows not yet fixed);
2. ``restart``: a new PrismRAG on the same directory; ``initialize_storages`` rolls the journalled merge forward.
   Invariants checked: no pending journal entry; no dangling edge; every pre-merge relation survives (renamed
   through the merge, intra-cluster ones excepted); no per-document row names a merged-away entity; deleting a
   document keeps the graph consistent and deleting all of them empties it.

    python benchmarks/crash_merge.py            # exit status 0 when every invariant holds
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POINTS = ("after_begin", "during_amerge", "after_amerge")
DOCS = {"d1": "Acme Corp builds rockets in Texas with Bob Stone. Acme Corp hired Carol White.",
        "d2": "Acme Corporation builds rockets in Texas with Bob Stone.",
        "d3": "Bob Stone met Carol White in Paris."}
WORKSPACE = "crash"


def _judge(body):
    text = body["messages"][-1]["content"]
    same = "Entity A: Acme Corp (" in text and "Entity B: Acme Corporation (" in text or (
        "Entity A: Acme Corporation (" in text and "Entity B: Acme Corp (" in text)
    return json.dumps({"merge": same, "confidence": 0.99 if same else 0.1, "canonical_name": "Acme Corporation"})


async def _rag(working_dir: str):
    from lightrag_prism import PrismRAG
    from tests.helpers import lightrag_kwargs
    from tests.scripted_server import ScriptedServer

    server = ScriptedServer().start()
    server.script("You deduplicate entities", _judge)
    rag = PrismRAG(**lightrag_kwargs(server, working_dir, workspace=WORKSPACE))
    await rag.initialize_storages()
    return rag, server


async def _edges(rag) -> list[list[str]]:
    return sorted(sorted([e["source"], e["target"]]) for e in await rag.chunk_entity_relation_graph.get_all_edges())


async def build(working_dir: str, point: str) -> None:
    from lightrag_prism.insert.merging.agentic import agentic_merge

    rag, _ = await _rag(working_dir)
    await rag.ainsert(list(DOCS.values()), ids=list(DOCS))
    Path(working_dir, "edges_before.json").write_text(json.dumps(await _edges(rag)))
    if point == "during_amerge":
        graph, calls = rag.chunk_entity_relation_graph, []
        original = graph.upsert_edge

        async def dying_upsert_edge(*args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                os._exit(137)
            return await original(*args, **kwargs)

        graph.upsert_edge = dying_upsert_edge

    def crash(at: str) -> None:
        if at == point:
            os._exit(137)

    await agentic_merge(rag, ["Acme Corp"], 0.5, crash_hook=crash)
    raise SystemExit("merge finished without reaching the crash point")


async def _consistency(rag) -> list[str]:
    graph, problems = rag.chunk_entity_relation_graph, []
    labels = set(await graph.get_all_labels())
    for a, b in await _edges(rag):
        if a not in labels or b not in labels:
            problems.append(f"dangling edge {a} - {b}")
    return problems


async def restart(working_dir: str) -> dict:
    from lightrag_prism.insert.merging.agentic import open_merge_state

    rag, _ = await _rag(working_dir)  # initialize_storages rolls forward
    problems = await _consistency(rag)
    if (await open_merge_state(rag))[0].pending():
        problems.append("journal still pending")
    rename = {"Acme Corp": "Acme Corporation"}
    after = {tuple(e) for e in await _edges(rag)}
    for a, b in json.loads(Path(working_dir, "edges_before.json").read_text()):
        ra, rb = sorted([rename.get(a, a), rename.get(b, b)])
        if ra != rb and (ra, rb) not in after:
            problems.append(f"relation lost: {a} - {b}")
    if "Acme Corp" in await rag.chunk_entity_relation_graph.get_all_labels():
        problems.append("merge not completed")
    for row in await rag.full_entities.get_by_ids(list(DOCS)):
        if row and "Acme Corp" in row["entity_names"]:
            problems.append(f"stale full_entities row {row.get('_id')}")
    weight = (await rag.chunk_entity_relation_graph.get_edge("Acme Corporation", "Texas") or {}).get("weight")
    await rag.adelete_by_doc_id("d1")
    problems += [f"after deleting d1: {p}" for p in await _consistency(rag)]
    for doc in ("d2", "d3"):
        await rag.adelete_by_doc_id(doc)
    left = await rag.chunk_entity_relation_graph.get_all_labels()
    if left:
        problems.append(f"graph not empty after deleting every document: {left}")
    await rag.finalize_storages()
    return {"problems": problems, "acme_texas_weight": weight}


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "build":
        asyncio.run(build(sys.argv[2], sys.argv[3]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "restart":
        print(json.dumps(asyncio.run(restart(sys.argv[2]))))
        return 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    failures = 0
    for point in POINTS:
        with tempfile.TemporaryDirectory() as wd:
            built = subprocess.run([sys.executable, __file__, "build", wd, point], env=env, capture_output=True,
                                   text=True)
            restarted = subprocess.run([sys.executable, __file__, "restart", wd], env=env, capture_output=True,
                                       text=True)
            try:
                result = json.loads(restarted.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                result = {"problems": [f"restart failed: {restarted.stderr[-2000:]}"]}
            ok = built.returncode == 137 and not result["problems"]
            failures += not ok
            print(f"{point:14s} build exit={built.returncode} restart: "
                  f"{'OK' if ok else 'FAIL'} {json.dumps(result)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
