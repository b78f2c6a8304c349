"""PrismNetworkXStorage.__post_init__ is LightRAG's with the graph read by the stream reader (storages/graphml.py)."""

from __future__ import annotations

import networkx as nx
from lightrag.kg.networkx_impl import NetworkXStorage

from lightrag_prism.storages.graph import PrismNetworkXStorage, write_graph_file
from tests.foundation.test_fast_graphml import random_graph, same_graph
from tests.helpers import hash_embedding_func


def _made(cls, tmp_path, workspace):
    return cls(namespace="chunk_entity_relation", workspace=workspace, embedding_func=hash_embedding_func(),
               global_config={"working_dir": str(tmp_path)})


def test_the_storage_is_set_up_as_lightrags_own(tmp_path):
    """The same attributes with the same values as LightRAG's (a LightRAG release that sets up something more fails
    here), and the same graph read from the same file."""
    for workspace in ("w", ""):
        graph = random_graph(3)
        folder = tmp_path / workspace if workspace else tmp_path
        folder.mkdir(exist_ok=True)
        write_graph_file(graph, str(folder / "graph_chunk_entity_relation.graphml"))
        stock, prism = _made(NetworkXStorage, tmp_path, workspace), _made(PrismNetworkXStorage, tmp_path, workspace)
        ours = {k: v for k, v in vars(prism).items() if k != "_graph"}
        theirs = {k: v for k, v in vars(stock).items() if k != "_graph"}
        assert ours.keys() == theirs.keys()
        for name, value in theirs.items():
            if name != "embedding_func":
                assert ours[name] == value, name
        same_graph(prism._graph, stock._graph)
        assert prism._graph.number_of_nodes() == graph.number_of_nodes() > 0


def test_no_file_is_an_empty_graph_as_in_lightrag(tmp_path):
    prism = _made(PrismNetworkXStorage, tmp_path, "empty")
    assert isinstance(prism._graph, nx.Graph) and prism._graph.number_of_nodes() == 0
    assert PrismNetworkXStorage.load_nx_graph(str(tmp_path / "none.graphml")) is None
