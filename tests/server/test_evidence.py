"""The explorer's evidence subgraph (pure): seeds, entities and passages from each mode's output shape."""

from lightrag_prism.server.evidence import LAYER_X, evidence_graph

CHUNKS = [{"chunk_id": "c1", "content": "Vexholm\nThe lighthouse ...", "score": 1.0},
          {"chunk_id": "c2", "content": "Olvide\nborn in Vexholm", "score": 0.5}]


def nodes_by_id(graph):
    return {n["id"]: n for n in graph["nodes"]}


def edges(graph, kind):
    return {frozenset((e["source"], e["target"])) for e in graph["edges"] if e["kind"] == kind}


def test_prism_shape_seeds_paths_and_mentions():
    data = {
        "entities": [
            {"entity_name": "Marta Olvide", "found_by": "seed", "source_id": "c2"},
            {"entity_name": "Vexholm Lighthouse", "found_by": "multihop+ppr", "source_id": "c1<SEP>c9",
             "path": ["Marta Olvide", "Vexholm", "Vexholm Lighthouse"]},
        ],
        "relationships": [{"src_id": "Marta Olvide", "tgt_id": "Vexholm Lighthouse", "keywords": "near"}],
        "chunks": CHUNKS,
    }
    graph = evidence_graph(data, {})
    nodes = nodes_by_id(graph)
    assert graph["seeds"] == ["Marta Olvide"]
    assert nodes["e:Marta Olvide"]["kind"] == "seed"
    assert nodes["e:Vexholm"]["kind"] == "entity"  # a path's middle entity is drawn even though not retrieved
    assert nodes["p:c1"]["label"] == "#1 Vexholm" and nodes["p:c1"]["kind"] == "passage"
    assert edges(graph, "path") == {frozenset(("e:Marta Olvide", "e:Vexholm")),
                                    frozenset(("e:Vexholm", "e:Vexholm Lighthouse"))}
    assert edges(graph, "mentions") == {frozenset(("e:Vexholm Lighthouse", "p:c1")),
                                        frozenset(("e:Marta Olvide", "p:c2"))}
    assert edges(graph, "relation") == {frozenset(("e:Marta Olvide", "e:Vexholm Lighthouse"))}


def test_hipporag_shape_uses_metadata_and_looked_up_sources():
    prism = {"hipporag": {"seeds": [{"entity": "Marta Olvide", "weight": 1.0}],
                          "facts": [{"fact": ["Marta Olvide", "born in", "Vexholm"], "score": 0.9},
                                    {"fact": ["broken"], "score": 0.1}]}}
    graph = evidence_graph({"chunks": CHUNKS}, prism, sources={"Vexholm": "c1<SEP>c2"})
    assert graph["seeds"] == ["Marta Olvide"]
    assert edges(graph, "relation") == {frozenset(("e:Marta Olvide", "e:Vexholm"))}
    assert [e["label"] for e in graph["edges"] if e["kind"] == "relation"] == ["born in"]
    assert edges(graph, "mentions") == {frozenset(("e:Vexholm", "p:c1")), frozenset(("e:Vexholm", "p:c2"))}


def test_fidelis_paths_and_topic_entities():
    prism = {"topic_entities": ["Marta Olvide"],
             "paths": [[["Marta Olvide", "born in", "Vexholm"], ["Vexholm", "has", "Vexholm Lighthouse"]]]}
    graph = evidence_graph({"chunks": []}, prism)
    assert graph["seeds"] == ["Marta Olvide"]
    assert edges(graph, "path") == {frozenset(("e:Marta Olvide", "e:Vexholm")),
                                    frozenset(("e:Vexholm", "e:Vexholm Lighthouse"))}


def test_layout_columns_in_rank_order_and_limits():
    data = {"entities": [{"entity_name": f"E{i}", "found_by": "ppr"} for i in range(40)],
            "chunks": [{"chunk_id": f"c{i}", "content": f"t{i}"} for i in range(30)]}
    graph = evidence_graph(data, {}, max_entities=5, max_passages=4)
    nodes = graph["nodes"]
    assert sum(n["kind"] == "entity" for n in nodes) == 5 and sum(n["kind"] == "passage" for n in nodes) == 4
    for kind in ("entity", "passage"):
        column = [n for n in nodes if n["kind"] == kind]
        assert {n["x"] for n in column} == {LAYER_X[kind]}
        ys = [n["y"] for n in column]
        assert ys == sorted(ys) and 0 < ys[0] and ys[-1] < 1  # rank 1 at the top


def test_empty_result_draws_nothing():
    assert evidence_graph({}, None) == {"nodes": [], "edges": [], "seeds": []}
