"""Shared helpers for the insert integration tests: PrismRAG instances talking to the scripted server."""

from __future__ import annotations

import asyncio
import json

from lightrag_prism import PrismRAG
from tests.helpers import lightrag_kwargs


async def make_rag(server, tmp_path, **overrides) -> PrismRAG:
    rag = PrismRAG(**lightrag_kwargs(server, tmp_path, **overrides))
    await rag.initialize_storages()
    return rag


async def make_offline_rag(server, tmp_path) -> PrismRAG:
    """The same instance with no LLM configured (the fallback paths)."""
    kwargs = lightrag_kwargs(server, tmp_path)
    kwargs.pop("llm_model_func")
    rag = PrismRAG(**kwargs)
    await rag.initialize_storages()
    return rag


async def reopen(rag: PrismRAG, server, **overrides) -> PrismRAG:
    """A new instance on the same working_dir and workspace (what a restarted process would build)."""
    kwargs = lightrag_kwargs(server, rag.working_dir, workspace=rag.workspace, **overrides)
    new = PrismRAG(**kwargs)
    await new.initialize_storages()
    return new


async def node_descriptions(rag: PrismRAG) -> dict[str, str]:
    graph = rag.chunk_entity_relation_graph
    labels = await graph.get_all_labels()
    nodes = await asyncio.gather(*(graph.get_node(n) for n in labels))
    return {n: d["description"] for n, d in zip(labels, nodes)}


async def assert_graph_consistent(rag: PrismRAG) -> None:
    """Every edge's endpoints exist; every full_entities name is a node."""
    graph = rag.chunk_entity_relation_graph
    labels = set(await graph.get_all_labels())
    for edge in await graph.get_all_edges():
        assert edge["source"] in labels and edge["target"] in labels, edge


def user_prompts(server, marker: str) -> list[str]:
    return [r.text for r in server.chat_requests() if marker in r.text]


def json_reply(payload) -> str:
    return json.dumps(payload)


class FreshLoop:
    """A private event loop for sync-API tests; closing it first stops LightRAG's LLM queue workers."""

    def __enter__(self) -> asyncio.AbstractEventLoop:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        return self.loop

    def __exit__(self, *exc) -> None:
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()
        asyncio.set_event_loop(None)
