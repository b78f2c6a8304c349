"""storages/graphml.py: the graph file it writes reads back as the graph networkx's own writer gives."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from lightrag_prism.storages.graph import write_graph_file
from lightrag_prism.storages.graphml import Unsupported, _StreamReader, graphml_text, read_graphml, write_graphml

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


def same_graph(ours: nx.Graph, theirs: nx.Graph) -> None:
    """Equal as networkx's reader makes them: type, graph data, nodes with data in order, each node's neighbours
    with edge data in order, edges in order."""
    assert type(ours) is type(theirs)
    assert ours.graph == theirs.graph
    assert list(ours.nodes(data=True)) == list(theirs.nodes(data=True))
    assert [(u, list(ours.adj[u].items())) for u in ours] == [(u, list(theirs.adj[u].items())) for u in theirs]
    assert list(ours.edges(data=True)) == list(theirs.edges(data=True))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("writer", [write_graphml, nx.write_graphml], ids=["ours", "networkx"])
def test_the_stream_reader_reads_what_networkx_reads(tmp_path, seed, writer):
    graph = random_graph(seed)
    rng = random.Random(seed)
    graph.add_edge("loop", "loop", weight=1.0)  # a self-loop
    graph.add_node("lonely")  # no data, no edge
    for node in rng.sample(list(graph), 5):  # edges met before one end's own edges: neighbour orders differ
        graph.add_edge(node, "late", description="")
    path = str(tmp_path / "g.graphml")
    writer(graph, path)
    with open(path, "rb") as handle:
        assert _StreamReader().read(handle) is not None  # read by the stream, not handed to networkx
    same_graph(read_graphml(path), nx.read_graphml(path))


GRAPHML_HEAD = '<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'


@pytest.mark.parametrize("body", [
    # typed keys, an empty value (networkx: "" whatever the type), booleans, a comment inside a value, graph data
    '<key id="a" for="node" attr.name="n" attr.type="int"/><key id="b" for="node" attr.name="ok" attr.type="boolean"/>'
    '<key id="c" for="edge" attr.name="w" attr.type="double"/><key id="g" for="graph" attr.name="name" '
    'attr.type="string"/><graph edgedefault="undirected"><data key="g">G</data><node id="x"><data key="a">3</data>'
    '<data key="b">TRUE</data></node><node id="y"><data key="a"></data><data key="b">0</data></node>'
    '<node id="x"><data key="a">4</data></node><edge source="y" target="z"><data key="c">2.5</data></edge>'
    '<edge source="x" target="y"><data key="c">1<!-- c -->2</data></edge></graph>',
    # no edgedefault
    '<key id="a" for="node" attr.name="n" attr.type="string"/><graph><node id="1"><data key="a">&amp; &lt;</data>'
    '</node><edge source="1" target="2"/></graph>',
], ids=["typed", "plain"])
def test_hand_written_documents_read_as_networkx_reads_them(tmp_path, body):
    path = tmp_path / "g.graphml"
    path.write_text(GRAPHML_HEAD + body + "</graphml>\n")
    with path.open("rb") as handle:
        _StreamReader().read(handle)  # no Unsupported
    same_graph(read_graphml(str(path)), nx.read_graphml(str(path)))


@pytest.mark.parametrize("body", [
    '<graph edgedefault="directed"><node id="a"/><edge source="a" target="b"/></graph>',  # a DiGraph
    '<graph edgedefault="undirected"><edge source="a" target="b"/><edge source="b" target="a"/></graph>',  # multi
    '<graph edgedefault="undirected"><edge id="e1" source="a" target="b"/></graph>',  # an edge id attribute
    '<key id="a" for="node" attr.name="n" attr.type="int"><default>7</default></key>'
    '<graph edgedefault="undirected"><node id="x"/></graph>',  # a key default
    '<graph edgedefault="undirected"><edge source="a" target="b"/><node id="c"/></graph>',  # a node after edges
    '<graph edgedefault="undirected"><node id="a"/></graph><graph edgedefault="undirected"><node id="b"/></graph>',
], ids=["directed", "parallel", "edge-id", "default", "late-node", "two-graphs"])
def test_documents_only_networkx_reads_exactly_go_to_networkx(tmp_path, body):
    path = tmp_path / "g.graphml"
    path.write_text(GRAPHML_HEAD + body + "</graphml>\n")
    with pytest.raises(Unsupported), path.open("rb") as handle:
        _StreamReader().read(handle)
    ours, theirs = read_graphml(str(path)), nx.read_graphml(str(path))
    assert type(ours) is type(theirs) and list(ours.nodes(data=True)) == list(theirs.nodes(data=True))
    assert sorted(map(str, ours.edges(data=True))) == sorted(map(str, theirs.edges(data=True)))


@pytest.mark.parametrize("body", ['<graph><node id="a"><data key="nope">1</data></node></graph>',  # unknown key
                                  '<graph><node id="a"></graph>'])  # not XML
def test_a_broken_document_fails_as_networkx_fails(tmp_path, body):
    path = tmp_path / "g.graphml"
    path.write_text(GRAPHML_HEAD + body + "</graphml>\n")
    with pytest.raises(Exception) as theirs:
        nx.read_graphml(str(path))
    with pytest.raises(type(theirs.value)):
        read_graphml(str(path))
