"""The GraphML file of LightRAG's NetworkX graph written directly: the same graph read back, 2x faster.

``NetworkXStorage`` persists by rewriting ``graph_chunk_entity_relation.graphml`` with ``nx.write_graphml``.
networkx infers an XML type for every attribute value and builds an element tree: 1.1 s per write of a
27,000-node graph with lxml, 2.3 s without. :func:`write_graphml` writes the same document (the same keys, types
and values; ``nx.read_graphml`` returns an equal graph, see ``tests/foundation/test_fast_graphml.py``) as one string
in half the time. Anything it does not handle exactly like networkx goes to ``nx.write_graphml``: directed graphs,
multigraphs, graph-level data or key defaults, values that are not ``str``/``int``/``float``/``bool``, and strings
with characters XML cannot hold (networkx raises on those, as before). PrismRAG's graph storage writes with it
(``graph.py``); nothing else does.

:func:`read_graphml` reads such a document back as ``nx.read_graphml`` does (the same nodes, edges, data and orders)
from a stream of parser events. networkx builds the whole element tree, then a multigraph, then copies it into a
``Graph``: reading the 62 MB file of the 9,239-passage bench index left 720 MB resident for a graph of 120 MB (the
tree's freed objects sat in memory pages among the graph's), 6.2 s. Anything it does not read exactly like networkx
(directed graphs, parallel edges, key defaults, edge ids, ports, nested graphs, yFiles data, a second graph, an
unknown key, nodes after edges) is read by ``nx.read_graphml``.
"""

from __future__ import annotations

import re
from xml.parsers import expat

import networkx as nx
from networkx.readwrite.graphml import GraphMLReader

XML_TYPES = {str: "string", int: "long", float: "double", bool: "boolean"}  # networkx's mapping for these types
_SPECIAL = re.compile("[&<>\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTRIBUTE_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;",
                                    "\r": "&#13;", "\t": "&#9;"})
HEADER = ("<?xml version='1.0' encoding='utf-8'?>\n"
          '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
          'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
          'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
          'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n')


class Unsupported(Exception):
    """The graph holds something only networkx's writer handles."""


def _text(value) -> str:
    text = value if type(value) is str else str(value)
    if _SPECIAL.search(text) is None:
        return text
    if _INVALID.search(text) is not None:
        raise Unsupported("a string XML cannot hold")
    return text.translate(_TEXT_ESCAPES)


def _attribute(value) -> str:
    text = str(value)
    if _INVALID.search(text) is not None:
        raise Unsupported("a string XML cannot hold")
    return text.translate(_ATTRIBUTE_ESCAPES)


def graphml_text(graph) -> str:
    """The GraphML document of an undirected simple ``graph`` (raises :class:`Unsupported` otherwise)."""
    if graph.is_directed() or graph.is_multigraph() or any(graph.graph.values()) \
            or set(graph.graph) - {"node_default", "edge_default"}:
        raise Unsupported("directed, multi-edge or graph-level data")
    keys: dict[tuple[str, str, type], str] = {}

    def data(scope: str, attributes: dict) -> str:
        out = []
        for name, value in attributes.items():
            kind = type(value)
            if kind not in XML_TYPES:
                raise Unsupported(f"a {kind.__name__} value")
            key = keys.get((scope, name, kind))
            if key is None:
                key = keys[(scope, name, kind)] = f"d{len(keys)}"
            out.append(f'\n  <data key="{key}">{_text(value)}</data>')
        return "".join(out)

    body = [f'<node id="{_attribute(node)}">{data("node", attributes)}\n</node>\n'
            for node, attributes in graph.nodes(data=True)]
    body += [f'<edge source="{_attribute(u)}" target="{_attribute(v)}">{data("edge", attributes)}\n</edge>\n'
             for u, v, attributes in graph.edges(data=True)]
    declared = "".join(f'<key id="{key}" for="{scope}" attr.name="{_attribute(name)}" attr.type="{XML_TYPES[kind]}"/>\n'
                       for (scope, name, kind), key in keys.items())
    return f'{HEADER}{declared}<graph edgedefault="undirected">\n{"".join(body)}</graph>\n</graphml>\n'


def write_graphml(graph, path: str) -> None:
    """``nx.write_graphml(graph, path)``, by :func:`graphml_text` when it supports the graph."""
    try:
        text = graphml_text(graph)
    except Unsupported:
        nx.write_graphml(graph, path)
        return
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


GRAPHML_NS = GraphMLReader.NS_GRAPHML
_NETWORKX = GraphMLReader()  # its attr.type -> Python type and boolean words: read as networkx reads them


def read_graphml(path: str):
    """``nx.read_graphml(path)``: by :class:`_StreamReader` when the document is one it reads exactly like networkx
    (see the module doc), else by networkx."""
    try:
        with open(path, "rb") as handle:
            return _StreamReader().read(handle)
    except (Unsupported, expat.ExpatError):  # networkx reads it, or raises its own error
        return nx.read_graphml(path)


class _StreamReader:
    """One pass of expat events over a GraphML document: nodes and edges into plain dicts, then the ``Graph`` that
    networkx's reader makes of them. Raises :class:`Unsupported` where networkx's result could differ."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, type]] = {}  # key id -> (attribute name, python type)
        self.nodes: dict = {}  # node -> data, in networkx's order (declared, then new edge ends)
        self.adjacency: dict = {}  # node -> neighbour -> edge data, each neighbour in the order first met
        self.graph_data: dict = {}
        self.path: list[str] = []  # local names of the open elements
        self.graphs = 0
        self.edges_seen = False
        self.owner: dict | None = None  # where the open <data> element's value goes
        self.data_key: str | None = None
        self.text: list[str] | None = None

    def read(self, handle):
        parser = expat.ParserCreate(namespace_separator="}")
        parser.buffer_text = True
        parser.StartElementHandler, parser.EndElementHandler = self._start, self._end
        parser.CharacterDataHandler = self._characters
        parser.ParseFile(handle)
        if self.graphs != 1:
            raise Unsupported("no graph, or more than one")
        graph = nx.Graph()
        graph.graph.update({"node_default": {}, "edge_default": {}}, **self.graph_data)
        graph.add_nodes_from(self.nodes.items())
        # networkx copies its multigraph into a Graph node by node, neighbour by neighbour: the same order here
        done = set()
        for u, neighbours in self.adjacency.items():
            for v, data in neighbours.items():
                if (u, v) not in done:
                    graph.add_edge(u, v, **data)
                    done.add((v, u))
        return graph

    def _start(self, tag: str, attributes: dict) -> None:
        namespace, _, name = tag.rpartition("}")
        if namespace != GRAPHML_NS:
            raise Unsupported(f"an element outside GraphML's namespace: {tag}")
        depth = len(self.path)
        self.path.append(name)
        if self.text is not None:
            raise Unsupported("a data element with elements inside")
        if depth == 0 and name == "graphml":
            return
        if depth == 1 and name == "key":
            self._key(attributes)
        elif depth == 1 and name == "graph":
            self.graphs += 1
            if self.graphs > 1 or attributes.get("edgedefault") == "directed":
                raise Unsupported("a directed graph, or a second graph")
        elif depth == 2 and self.path[1] == "graph" and name == "node":
            if self.edges_seen or "yfiles.foldertype" in attributes:
                raise Unsupported("a node after edges, or a nested graph")
            node = attributes.get("id")
            if node is None:
                raise Unsupported("a node without an id")
            self.owner = self.nodes.get(node)
            if self.owner is None:
                self.owner = self.nodes[node] = {}
                self.adjacency[node] = {}
        elif depth == 2 and self.path[1] == "graph" and name == "edge":
            self._edge(attributes)
        elif name == "data" and (depth == 3 and self.owner is not None or depth == 2 and self.path[1] == "graph"):
            if depth == 2:
                self.owner = self.graph_data
            self.data_key, self.text = attributes.get("key"), []
            if self.data_key not in self.keys:
                raise Unsupported("an unknown key")
        else:
            raise Unsupported(f"a {name} element here")

    def _key(self, attributes: dict) -> None:
        kind = attributes.get("attr.type")
        if "yfiles.type" in attributes or kind not in _NETWORKX.python_type or kind == "yfiles" \
                or None in (attributes.get("attr.name"), attributes.get("id")):
            raise Unsupported("a yFiles key, or a key without a known type, a name or an id")
        self.keys[attributes["id"]] = (attributes["attr.name"], _NETWORKX.python_type[kind])

    def _edge(self, attributes: dict) -> None:
        if "id" in attributes or attributes.get("directed") == "true":
            raise Unsupported("an edge id, or a directed edge")
        self.edges_seen = True
        u, v = attributes.get("source"), attributes.get("target")
        if u is None or v is None:
            raise Unsupported("an edge without both ends")
        for node in (u, v):
            if node not in self.nodes:
                self.nodes[node] = {}
                self.adjacency[node] = {}
        if v in self.adjacency[u]:
            raise Unsupported("parallel edges (networkx reads a multigraph)")
        self.owner = self.adjacency[u][v] = self.adjacency[v][u] = {}

    def _characters(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def _end(self, tag: str) -> None:
        name = self.path.pop()
        if name == "data":
            name_of, kind = self.keys[self.data_key]
            text = "".join(self.text)
            # networkx: an empty element is "" whatever its key's type
            self.owner[name_of] = (_NETWORKX.convert_bool[text.lower()] if kind is bool else kind(text)) if text else ""
            self.text, self.data_key = None, None
            if len(self.path) == 2:  # graph data: no owner after it
                self.owner = None
        elif name in ("node", "edge"):
            self.owner = None
