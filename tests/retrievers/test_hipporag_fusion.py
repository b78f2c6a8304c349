"""The hipporag knobs beyond HippoRAG 2: query -> entity-name seeds and the RRF of PPR with dense."""

from __future__ import annotations

import numpy as np
import pytest

from lightrag_prism import QueryParam
from lightrag_prism.retrievers.hipporag import RRF_K, entity_seeds, rrf_with_dense


def test_entity_seeds_weight_top_names_by_cosine_over_passage_count():
    names = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    num_chunks = np.array([2.0, 1.0, 1.0, 0.0])
    seeds = entity_seeds(names, query, num_chunks, top_n=2, weight=0.5)
    np.testing.assert_allclose(seeds, [0.5 * 1.0 / 2, 0.5 * 0.6 / 1, 0.0, 0.0], rtol=1e-6)
    assert not entity_seeds(names, query, num_chunks, top_n=2, weight=0.0).any()  # HippoRAG 2: no such seeds
    # an entity in no passage divides by 1; a negative cosine never seeds negatively
    seeds = entity_seeds(names, -query, num_chunks, top_n=1, weight=1.0)
    np.testing.assert_allclose(seeds, [0.0, 0.0, 0.0, 1.0], rtol=1e-6)


def test_rrf_with_dense_matches_hand_computed_ranks():
    ppr = np.array([0.5, 0.3, 0.2, 0.0])  # PPR ranks 1, 2, 3, 4
    dense = np.array([0.1, 0.2, 0.9, 0.3])  # dense ranks 4, 3, 1, 2
    fused = rrf_with_dense(ppr, dense, dense_weight=1.0)
    expected = [1 / (RRF_K + r) + 1 / (RRF_K + d) for r, d in zip([1, 2, 3, 4], [4, 3, 1, 2])]
    np.testing.assert_allclose(fused, expected)
    assert list(np.argsort(-fused, kind="stable")) == [2, 0, 1, 3]  # 1/61+1/64 > 1/62+1/63: the PPR leader wins the near-tie
    np.testing.assert_array_equal(rrf_with_dense(ppr, dense, 0.0), ppr)  # weight 0 keeps PPR scores
    low = rrf_with_dense(ppr, dense, 0.1)
    assert list(np.argsort(-low)) == [0, 1, 2, 3]  # a small dense weight only breaks near-ties
    assert fused.max() < 1.0  # stays below the dense head's scores


def test_new_knobs_validate():
    with pytest.raises(ValueError, match="entity_seed_weight"):
        QueryParam(mode="hipporag", entity_seed_weight=-1.0)
    with pytest.raises(ValueError, match="hipporag_dense_rrf"):
        QueryParam(mode="hipporag", hipporag_dense_rrf=-0.5)
