"""The ``prism`` mode: PrismRAG's three perspectives fused into one passage ranking (KIND = "kg").

Stages, in order:

1. seeds: fact linking and name linking on the shared passage graph (``retrievers/views/passage_rank.py``);
2. expansion (``expand.py``): query-scored multi-hop traversal and edge-weighted FastRP from the seeds;
3. ranking (``mode.py``): one query-aware Personalized PageRank over entities and passages (the PPR perspective),
   its passage scores rank the chunks; optional context recognition filtering (``retrievers/recognition.py``).

The same perspectives augment the stock local/global/hybrid/mix modes (``mode.augment``) when a perspective knob is
on. Knobs (``PrismQueryParam``): ``prism_seed_facts``, ``prism_seed_phrases``, ``prism_name_linking``,
``prism_expansion_weight``, ``prism_passage_weight``, ``prism_dense_head``, ``prism_head_seed_weight``,
``prism_keyword_vectors``, ``linking_top_k``; the perspectives' ``max_hop``, ``top_neighbors``,
``multi_hop_relevance_threshold``, ``top_ppr_nodes``, ``top_fastrp_nodes``, ``fusion_method``, ``ppr_damping``,
``ppr_edge_floor``, ``seed_temperature``; ``enable_recognition``, ``recognition_batch_size``.
"""

from .mode import KIND, OWN_CHUNK_RANKING, augment, reads_keywords, retrieve

__all__ = ["KIND", "OWN_CHUNK_RANKING", "augment", "reads_keywords", "retrieve"]
