"""storages/graphml.py: the graph file it writes reads back as the graph networkx's own writer gives."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from lightrag_prism.storages.graph import write_graph_file
from lightrag_prism.storages.graphml import Unsupported, graphml_text, write_graphml

TRICKY = ["plain", "Zoë Ørsted", "東京タワー", "a & b < c > d", 'quote " and \' apostrophe', "new\nline\ttab",
          "  padded  ", "<SEP>joined<SEP>", "emoji 🎉", "", "]]> cdata end", "\u2028 separator"]


def random_graph(seed: int) -> nx.Graph:
    rng = random.Random(seed)
    graph = nx.Graph()
    names = [f"{rng.choice(TRICKY)} {i}" for i in range(30)]
    for name in names:
        graph.add_node(name, entity_id=name, entity_type=rng.choice(["person", "other"]),
                       description=rng.choice(TRICKY), source_id="chunk-1<SEP>chunk-2", created_at=rng.randrange(10**10))
    for _ in range(60):
        u, v = rng.sample(names, 2)
        graph.add_edge(u, v, weight=rng.choice([1.0, 2.5, 0.3, 7]), keywords=rng.choice(TRICKY),
                       description=rng.choice(TRICKY), truncate=rng.choice([True, False]))
    return graph


def read_back(graph: nx.Graph, path, writer) -> nx.Graph:
    writer(graph, str(path))
    return nx.read_graphml(str(path))


def edge_data(graph):
    return {frozenset((u, v)): d for u, v, d in graph.edges(data=True)}


@pytest.mark.parametrize("seed", range(5))
def test_reads_back_like_networkx_own_writer(tmp_path, seed):
    graph = random_graph(seed)
    ours, theirs = read_back(graph, tmp_path / "ours.graphml", write_graphml), \
        read_back(graph, tmp_path / "theirs.graphml", nx.write_graphml)
    assert dict(ours.nodes(data=True)) == dict(theirs.nodes(data=True))
    assert edge_data(ours) == edge_data(theirs)
    assert ours.graph == theirs.graph


def test_graphs_only_networkx_handles_go_to_networkx(tmp_path):
    directed = nx.DiGraph([("a", "b")])
    with pytest.raises(Unsupported):
        graphml_text(directed)
    write_graphml(directed, str(tmp_path / "d.graphml"))
    assert nx.read_graphml(str(tmp_path / "d.graphml")).is_directed()
    odd = nx.Graph()
    odd.add_node("n", value=None)
    with pytest.raises(Unsupported):
        graphml_text(odd)
    control = nx.Graph()
    control.add_node("n", description="bell \x07")
    with pytest.raises(Unsupported):
        graphml_text(control)
    with pytest.raises(ValueError):  # what networkx itself does with such a string
        write_graphml(control, str(tmp_path / "c.graphml"))


def test_prism_graph_storage_writes_through_it(tmp_path):
    graph = random_graph(7)
    write_graph_file(graph, str(tmp_path / "g.graphml"), "ws")
    assert edge_data(nx.read_graphml(str(tmp_path / "g.graphml"))) == edge_data(
        read_back(graph, tmp_path / "theirs.graphml", nx.write_graphml))
