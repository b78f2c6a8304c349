"""Child process of test_server_backed.py: insert into, or query, a PrismRAG on a server-backed stack.

    python -m tests.storages.stack_worker insert STACK WORKING_DIR WORKSPACE   # inserts, then kills itself (-9)
    python -m tests.storages.stack_worker query STACK WORKING_DIR WORKSPACE    # prints JSON: work and times
    python -m tests.storages.stack_worker state STACK WORKING_DIR WORKSPACE    # prints JSON: the plugin state seen

The servers come from the environment (``REDIS_URI``, ``POSTGRES_*``). ``query`` reports, per mode, the texts the
first and a warm query sent to the embedder, the graph snapshots they built, and their times.
"""

import asyncio
import json
import os
import signal
import sys
import time

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism.eval.datasets import load_2wiki_corpus
from tests.insert.test_merging_integration import D1
from tests.insert.test_offline_graph import CountingEmbedder
from tests.storages.servers import STACKS

N_PASSAGES = 20
QUERY_MODES = ("prism", "hipporag", "naive", "hybrid")


def corpus() -> tuple[list[str], list[str]]:
    passages = load_2wiki_corpus()[:N_PASSAGES]
    return [p.content for p in passages], [f"p{i:03d}" for i in range(N_PASSAGES)]


async def plugin_state_report(rag, embedder: CountingEmbedder) -> dict:
    """What a second replica sees of the plugin state another one wrote, and what its first hipporag query costs."""
    from lightrag_prism.insert.merging.agentic import open_merge_state
    from lightrag_prism.insert.pipeline import content_key
    from lightrag_prism.insert.timestamps.store import lookup
    from lightrag_prism.insert.merging.rebuild import load_aliases
    from lightrag_prism.plugin_state import plugin_state
    from lightrag_prism.retrievers.views.passage_graph import hippo_state

    log, _ = await open_merge_state(rag)
    state = plugin_state(rag)
    before = embedder.texts
    result = await rag.aquery_data("Where does Acme Corporation build rockets?", PrismQueryParam(mode="hipporag"))
    return {"guidance": rag.addon_params.get("entity_types_guidance", ""),
            "decisions": [(d.a, d.b, d.decision) for d in log.decisions()],
            "aliases": await load_aliases(state),
            "timestamps": {content_key(D1): await lookup(state, content_key(D1))},
            "chunks": [c["chunk_id"] for c in result["data"]["chunks"]],
            "first_query_embedded": embedder.texts - before,
            "vectors_loaded": hippo_state(rag).fact_index.loaded_total + hippo_state(rag).name_index.loaded_total}


async def main(action: str, stack: str, working_dir: str, workspace: str) -> None:
    embedder = CountingEmbedder()
    rag = PrismRAG(working_dir=working_dir, workspace=workspace, embedding_func=embedder.func(), **STACKS[stack])
    await rag.initialize_storages()
    if action == "state":
        report = await plugin_state_report(rag, embedder)
        await rag.finalize_storages()
        print(json.dumps(report), flush=True)
        return
    if action == "insert":
        texts, ids = corpus()
        await rag.ainsert(texts, ids=ids)
        print("inserted", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no finalize_storages: what a crash leaves
    report = {}
    questions = iter(f"Who was {p.title}?" for p in load_2wiki_corpus()[:N_PASSAGES])
    for label in ("first", "warm"):
        for mode in QUERY_MODES:
            texts, builds = embedder.texts, rag._snapshots.builds
            started = time.perf_counter()
            result = await rag.aquery_data(next(questions), PrismQueryParam(mode=mode, enable_rerank=False))
            assert result["status"] == "success", result.get("message")
            report[f"{label}/{mode}"] = {"embedded": embedder.texts - texts, "snapshots": rag._snapshots.builds - builds,
                                        "seconds": time.perf_counter() - started}
    await rag.finalize_storages()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
