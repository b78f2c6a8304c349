"""``NetworkXStorage`` as PrismRAG runs it: the graph file journaled, and written whole by ``graphml.py``.

The GraphML is read when the storage is constructed and when another process wrote it by
``graphml.read_graphml`` (networkx's reader left 720 MB resident for the 120 MB graph of a 9,239-passage index;
LightRAG's own reload in ``_get_graph``, reached only when the file is not journaled, keeps networkx's); each load is
followed here by its journal's replay. A flush appends the changed nodes and edges to the journal when the file is
journaled (``register_files``), else rewrites the file whole (``graphml.write_graphml``, 2x faster than networkx's
writer; the same graph reads back). The write methods note the nodes and edges they change, so a flush compares only
those.

Under ``serve --workers N`` (LightRAG's multi-process mode) a process flagged by another's write applies what that
one appended to the journal (``catch_up``) instead of LightRAG's whole reload, and tells the snapshot cache which
nodes and edges it changed (``on_foreign_write``).

Private coupling: ``__post_init__`` (LightRAG 1.5.7's with the read above, checked against LightRAG's by
``tests/storages/test_graph_storage_setup.py``), ``load_nx_graph``, ``_get_graph`` and ``_gate`` (the commit gate
LightRAG closes while a worker thread serialises the graph; all in the symbol registry with the write methods
overridden here), ``_graph`` and ``_graphml_xml_file``.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Callable

import networkx as nx
from lightrag.file_atomic import atomic_write, reap_orphan_tmp_files
from lightrag.kg.networkx_impl import NetworkXStorage
from lightrag.utils import logger, validate_workspace

from lightrag_prism import journal
from lightrag_prism.graph_changes import Written

from .graphml import read_graphml, write_graphml


def _node_keys(nodes) -> list:
    return [journal.node_touch(node) for node in nodes]


def _removed_node_keys(graph, nodes) -> list:
    keys = _node_keys(nodes)
    for node in nodes:
        if node in graph:
            keys.extend(journal.edge_touch(u, v) for u, v in graph.edges(node))
    return keys


def _edge_keys(edges) -> list:
    return [key for src, tgt in edges for key in (journal.edge_touch(src, tgt), *_node_keys([src, tgt]))]


def written_by(records: list[dict]) -> Written:
    """The names a run of journal records (``journal.GraphKind``) wrote, as the graph change log takes them."""
    nodes = [node for record in records for node, _ in record.get("nu", ())]
    edges = [(u, v) for record in records for key in ("eu", "ed") for u, v, *_ in record.get(key, ())]
    removed = [node for record in records for node in record.get("nd", ())]
    return Written(nodes=tuple(nodes + [n for edge in edges for n in edge]), edges=tuple(edges),
                   removed=tuple(removed))


def write_graph_file(graph: nx.Graph, file_name: str, workspace: str = "_") -> None:
    """``NetworkXStorage.write_nx_graph``'s atomic write, by :func:`graphml.write_graphml`."""
    logger.info(f"[{workspace}] Writing graph with {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges")
    atomic_write(file_name, lambda tmp: write_graphml(graph, tmp), workspace)


class PrismNetworkXStorage(NetworkXStorage):
    """LightRAG's NetworkX storage with a journaled graph file."""

    # Told what another process's write changed, once this process has applied it (``catch_up``): a Written of the
    # names, or None when the file was read whole (set by the snapshot cache, ``snapshot.py``).
    on_foreign_write: Callable[[Written | None], None] | None = None

    def __post_init__(self):
        """LightRAG 1.5.7's ``NetworkXStorage.__post_init__`` with the file read by :meth:`load_nx_graph`, then the
        journal replayed. ``tests/storages/test_graph_storage_setup.py`` checks that it sets what LightRAG's sets."""
        validate_workspace(self.workspace)
        workspace_dir = self.global_config["working_dir"]
        if self.workspace:
            workspace_dir = os.path.join(workspace_dir, self.workspace)
        else:
            self.workspace = ""
        os.makedirs(workspace_dir, exist_ok=True)
        self._graphml_xml_file = os.path.join(workspace_dir, f"graph_{self.namespace}.graphml")
        self._storage_lock = None
        self.storage_updated = None
        self._commit_gate = None
        self._commit_gate_loop = None
        reap_orphan_tmp_files(self._graphml_xml_file, workspace=self.workspace or "_")
        graph = self.load_nx_graph(self._graphml_xml_file)
        if graph is not None:
            logger.info(f"[{self.workspace}] Loaded graph from {self._graphml_xml_file} with "
                        f"{graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges")
        self._graph = journal.replay(self._graphml_xml_file, journal.GraphKind, graph or nx.Graph())

    @staticmethod
    def load_nx_graph(file_name) -> nx.Graph | None:
        """LightRAG's ``load_nx_graph`` by ``graphml.read_graphml``: the same graph without networkx's element
        tree (at 9,239 passages 185 MB resident after the read instead of 720, in half the time)."""
        return read_graphml(file_name) if os.path.exists(file_name) else None

    async def _get_graph(self):
        await self.catch_up()
        before = self._graph
        graph = await super()._get_graph()
        if graph is not before:  # reloaded from the file: another process wrote it
            journal.replay(self._graphml_xml_file, journal.GraphKind, graph)
            self._reloaded()
        return graph

    async def catch_up(self) -> bool:
        """When another process wrote the graph (LightRAG's update flag): apply what it appended to the journal, or
        read the file whole in a thread when it cannot be (LightRAG reads it whole on the event loop: 7 s for the
        GraphML of the 9,000-passage bench index); ``on_foreign_write`` hears which. True when the file is journaled
        across processes (other processes' writes are followed this way), else False and nothing done."""
        state = journal.registered(self._graphml_xml_file)
        if state is None or not state.across_processes:
            return False
        if self.storage_updated.value:
            async with self._storage_lock:
                if self.storage_updated.value:
                    await self._catch_up_locked(state)
        return True

    async def _catch_up_locked(self, state: journal.FileState) -> None:
        records = journal.catch_up(state, journal.GraphKind, self._graph)
        if records is None:
            file_name = self._graphml_xml_file
            self._graph = await asyncio.to_thread(
                lambda: journal.replay(file_name, journal.GraphKind, self.load_nx_graph(file_name) or nx.Graph()))
            self.storage_updated.value = False
            self._reloaded()
            return
        self.storage_updated.value = False
        if self.on_foreign_write is not None:
            self.on_foreign_write(written_by(records))

    def _reloaded(self) -> None:
        """The graph was read whole again after another process wrote it."""
        state = journal.registered(self._graphml_xml_file)
        if state is not None and state.across_processes:
            journal.note_reloaded(state)
        if self.on_foreign_write is not None:
            self.on_foreign_write(None)

    async def index_done_callback(self) -> bool:
        """LightRAG's commit (reload instead when another process wrote; else write with the commit gate closed,
        then flag the other processes), with the write appended to the journal when the file is journaled."""
        from lightrag.kg.shared_storage import set_all_update_flags
        from lightrag.utils import commit_in_storage_io, logger

        async with self._storage_lock:
            if self.storage_updated.value:
                state = journal.registered(self._graphml_xml_file)
                if state is not None and state.across_processes:
                    await self._catch_up_locked(state)
                    return False
                self._graph = journal.replay(self._graphml_xml_file, journal.GraphKind,
                                             self.load_nx_graph(self._graphml_xml_file) or nx.Graph())
                self.storage_updated.value = False
                self._reloaded()
                return False
        async with self._storage_lock:
            gate = self._gate()
            gate.clear()
            try:
                async def committed() -> None:
                    await set_all_update_flags(self.namespace, workspace=self.workspace)
                    self.storage_updated.value = False

                await commit_in_storage_io(partial(self._write_graph, self._graph), committed)
                return True
            except Exception as exc:
                logger.error(f"[{self.workspace}] Error saving graph: {exc}")
                raise
            finally:
                gate.set()

    def _write_graph(self, graph: nx.Graph) -> None:
        file_name = self._graphml_xml_file
        whole = partial(write_graph_file, graph, file_name, self.workspace)
        state = journal.registered(file_name)
        if state is None:
            whole()
            journal.remove_journal(file_name)
        else:
            journal.flush(state, journal.GraphKind, graph, whole)

    async def drop(self) -> dict[str, str]:
        journal.remove_journal(self._graphml_xml_file)
        return await super().drop()

    # --- writes, noting what they change (a removal also its edges: read from the graph before the call) ---

    async def _noting(self, keys, write, *args):
        """``await write(*args)``, then ``keys`` noted for the journal; ``keys`` is a list, or for a removal a
        function of the graph (called before the write, and only when the file is journaled)."""
        file_name = self._graphml_xml_file
        if not journal.registered(file_name):
            return await write(*args)
        if callable(keys):
            keys = keys(await self._get_graph())
        try:
            return await write(*args)
        finally:
            journal.touch(file_name, keys)

    async def upsert_node(self, node_id: str, node_data: dict[str, str]) -> None:
        return await self._noting(_node_keys([node_id]), super().upsert_node, node_id, node_data)

    async def upsert_nodes_batch(self, nodes: list[tuple[str, dict[str, str]]]) -> None:
        return await self._noting(_node_keys([node for node, _ in nodes]), super().upsert_nodes_batch, nodes)

    async def upsert_edge(self, source_node_id: str, target_node_id: str, edge_data: dict[str, str]) -> None:
        return await self._noting(_edge_keys([(source_node_id, target_node_id)]), super().upsert_edge,
                                  source_node_id, target_node_id, edge_data)

    async def upsert_edges_batch(self, edges: list[tuple[str, str, dict[str, str]]]) -> None:
        return await self._noting(_edge_keys([(src, tgt) for src, tgt, _ in edges]), super().upsert_edges_batch,
                                  edges)

    async def delete_node(self, node_id: str) -> None:
        return await self._noting(lambda graph: _removed_node_keys(graph, [node_id]), super().delete_node, node_id)

    async def remove_nodes(self, nodes: list[str]):
        nodes = list(nodes)
        return await self._noting(lambda graph: _removed_node_keys(graph, nodes), super().remove_nodes, nodes)

    async def remove_edges(self, edges: list[tuple[str, str]]):
        edges = list(edges)
        return await self._noting([journal.edge_touch(src, tgt) for src, tgt in edges], super().remove_edges, edges)
