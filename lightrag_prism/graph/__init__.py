"""Pure graph kernels: numpy/scipy arrays in, arrays out (no LightRAG import, no async, no I/O)."""
from .fastrp import FastRPState, fastrp_embeddings, fastrp_similarity, normalized_adjacency, random_projection
from .fusion import FusionResult, normalized_score_fusion, reciprocal_rank_fusion
from .knn import cached_rows, topk_cosine
from .select import top_k
from .multihop import MultihopResult, multihop_expand, path_to_seed
from .ppr import (
    Transition,
    edge_reweighted,
    personalized_pagerank,
    personalized_pagerank_batch,
    symmetric_ppr,
    symmetric_transition,
    transition_matrix,
)

__all__ = [
    "FastRPState",
    "FusionResult",
    "MultihopResult",
    "Transition",
    "cached_rows",
    "edge_reweighted",
    "fastrp_embeddings",
    "fastrp_similarity",
    "multihop_expand",
    "normalized_adjacency",
    "normalized_score_fusion",
    "path_to_seed",
    "personalized_pagerank",
    "personalized_pagerank_batch",
    "random_projection",
    "reciprocal_rank_fusion",
    "symmetric_ppr",
    "symmetric_transition",
    "top_k",
    "topk_cosine",
    "transition_matrix",
]
