"""The GraphML file of LightRAG's NetworkX graph written directly: the same graph read back, 2x faster.

``NetworkXStorage`` persists by rewriting ``graph_chunk_entity_relation.graphml`` with ``nx.write_graphml``.
networkx infers an XML type for every attribute value and builds an element tree: 1.1 s per write of a
27,000-node graph with lxml, 2.3 s without. :func:`write_graphml` writes the same document (the same keys, types
and values; ``nx.read_graphml`` returns an equal graph, see ``tests/foundation/test_fast_graphml.py``) as one string
in half the time. Anything it does not handle exactly like networkx goes to ``nx.write_graphml``: directed graphs,
multigraphs, graph-level data or key defaults, values that are not ``str``/``int``/``float``/``bool``, and strings
with characters XML cannot hold (networkx raises on those, as before). PrismRAG's graph storage writes with it
(``graph.py``); nothing else does.
"""

from __future__ import annotations

import re

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
        import networkx as nx

        nx.write_graphml(graph, path)
        return
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)

