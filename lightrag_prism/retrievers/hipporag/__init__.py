"""The ``hipporag`` mode: HippoRAG 2 retrieval over the LightRAG knowledge graph (KIND = "chunks").

Stages, in order:

1. facts (``views/facts.py``): one (subject, predicate, object) per relation, embedded in the fact index
   (``views/index.py``, kept in the ``prism_vectors`` KV namespace) and scored against the query;
2. recognition memory (``filter.py``): the LLM keeps the facts that matter (kept as scored without an LLM);
3. graph (``views/passage_graph.py``, shared with ``prism``): entities and passages with fact, synonym and mention
   edges;
4. ranking (``mode.py``): seeds from the kept facts (+ name linking), dense passage scores, Personalized PageRank;
   passages ranked by their PPR mass.

Knobs (``PrismQueryParam``): ``linking_top_k``, ``max_filtered_facts``, ``enable_fact_filter``,
``top_seed_phrases``, ``passage_node_weight``, ``hipporag_damping``, ``hipporag_dense_head``,
``hipporag_name_linking``.
"""

from .mode import KIND, retrieve

__all__ = ["KIND", "retrieve"]
