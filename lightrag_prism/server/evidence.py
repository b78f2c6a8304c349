"""The evidence subgraph of one query, laid out for the explorer page: seeds, expanded entities, passages.

Pure: it reads an ``aquery_data``/``aquery_llm`` result's ``data`` (entities and relations with ``found_by``,
``path`` and ``source_id``; ranked chunks) and ``metadata["prism"]`` (hipporag's seeds and facts, fidelis's topic
entities and paths), plus the ``source_id`` of entities the result names without one (``sources``).

* seeds: where a mode started (``found_by`` has ``seed``, the first entity of a multi-hop path, hipporag's seed
  entities, fidelis's topic entities);
* entities: the other retrieved entities, and the ends of hipporag's facts and fidelis's paths;
* passages: the top chunks; an entity links to a passage it was extracted from (``source_id``).

Positions: one column per kind (seeds, entities, passages), each in rank order from the top, in [0, 1].
"""

from __future__ import annotations

from typing import Any

import networkx as nx

GRAPH_SEP = "<SEP>"
SEED_TAG = "seed"
LAYER_X = {"seed": 0.06, "entity": 0.40, "passage": 0.72}  # column of each kind of node


def _tags(row: dict[str, Any]) -> set[str]:
    return set(str(row.get("found_by") or "").split("+")) - {""}


def _source_ids(source_id: str | None) -> set[str]:
    return set(str(source_id or "").split(GRAPH_SEP)) - {""}


def seed_names(entities: list[dict[str, Any]], prism: dict[str, Any]) -> list[str]:
    seeds = [e["entity_name"] for e in entities if SEED_TAG in _tags(e)]
    seeds += [e["path"][0] for e in entities if e.get("path")]
    seeds += [s.get("entity") for s in (prism.get("hipporag") or {}).get("seeds") or []]
    seeds += list(prism.get("topic_entities") or [])
    return [s for s in dict.fromkeys(seeds) if isinstance(s, str) and s]


def triples(prism: dict[str, Any]) -> tuple[list[list[str]], list[list[list[str]]]]:
    """hipporag's kept facts and fidelis's paths, as (subject, predicate, object) lists."""
    facts = [f["fact"] for f in (prism.get("hipporag") or {}).get("facts") or [] if len(f.get("fact") or []) == 3]
    paths = [[t for t in path if len(t) == 3] for path in prism.get("paths") or []]
    return facts, paths


def named_entities(data: dict[str, Any], prism: dict[str, Any], max_entities: int = 25) -> list[str]:
    """Every entity the drawing shows, seeds first, then in rank order."""
    entities = [e for e in data.get("entities") or [] if e.get("entity_name")]
    facts, paths = triples(prism)
    names = seed_names(entities, prism)
    for row in entities[:max_entities]:
        names += [row["entity_name"], *(row.get("path") or [])]
    names += [end for s, _, o in facts for end in (s, o)] + [end for p in paths for s, _, o in p for end in (s, o)]
    return list(dict.fromkeys(names))


def evidence_graph(data: dict[str, Any], prism: dict[str, Any] | None = None, sources: dict[str, str] | None = None,
                   max_entities: int = 25, max_passages: int = 10) -> dict[str, Any]:
    prism, sources = prism or {}, dict(sources or {})
    entities = [e for e in data.get("entities") or [] if e.get("entity_name")]
    sources.update({e["entity_name"]: e.get("source_id") for e in entities if e.get("source_id")})
    seeds = seed_names(entities, prism)
    graph = nx.Graph()
    for name in named_entities(data, prism, max_entities):
        graph.add_node(f"e:{name}", kind="seed" if name in seeds else "entity", label=name)
    chunks = [c for c in data.get("chunks") or [] if c.get("chunk_id")][:max_passages]
    for rank, chunk in enumerate(chunks, 1):
        title = (chunk.get("content") or "").strip().split("\n", 1)[0][:60]
        graph.add_node(f"p:{chunk['chunk_id']}", kind="passage", label=f"#{rank} {title}")

    for node in [n for n in graph if n.startswith("e:")]:
        for cid in _source_ids(sources.get(node[2:])):
            if f"p:{cid}" in graph:
                graph.add_edge(node, f"p:{cid}", kind="mentions", label="")
    facts, paths = triples(prism)
    relations = [(r.get("src_id"), r.get("keywords"), r.get("tgt_id")) for r in data.get("relationships") or []]
    for s, predicate, o in relations + [tuple(f) for f in facts]:
        _link(graph, s, o, "relation", predicate)
    for row in entities:
        path = row.get("path") or []
        for a, b in zip(path, path[1:]):
            _link(graph, a, b, "path", "")
    for path in paths:
        for s, predicate, o in path:
            _link(graph, s, o, "path", predicate)

    positions = _layout(graph)
    nodes = [{"id": n, "kind": d["kind"], "label": d["label"], "x": positions[n][0], "y": positions[n][1]}
             for n, d in graph.nodes(data=True)]
    edges = [{"source": a, "target": b, "kind": d["kind"], "label": d["label"]} for a, b, d in graph.edges(data=True)]
    return {"nodes": nodes, "edges": edges, "seeds": seeds}


def _link(graph: nx.Graph, a: Any, b: Any, kind: str, label: Any) -> None:
    u, v = f"e:{a}", f"e:{b}"
    if u in graph and v in graph and u != v and (kind == "path" or not graph.has_edge(u, v)):
        graph.add_edge(u, v, kind=kind, label=str(label or ""))


def _layout(graph: nx.Graph) -> dict[str, tuple[float, float]]:
    """One column per kind, nodes in rank order from the top, rows evenly spaced; both axes in [0, 1]."""
    columns: dict[str, list[str]] = {kind: [] for kind in LAYER_X}
    for node, kind in graph.nodes(data="kind"):
        columns[kind].append(node)
    rows = max((len(nodes) for nodes in columns.values()), default=1)
    return {node: (LAYER_X[kind], (i + 0.5) / rows) for kind, nodes in columns.items() for i, node in enumerate(nodes)}
