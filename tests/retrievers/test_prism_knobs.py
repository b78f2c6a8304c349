"""The prism mode's knobs: validation, mode-dependent defaults, and the expansion feed of the PPR."""

from __future__ import annotations

import numpy as np
import pytest

from lightrag_prism import QueryParam
from lightrag_prism.retrievers.prism import mode as prism


@pytest.mark.parametrize("knob, value", [("ppr_edge_floor", -0.1), ("prism_expansion_weight", float("nan")),
                                         ("prism_passage_weight", "0.1"), ("ppr_damping", 1.0),
                                         ("prism_seed_phrases", -1), ("prism_seed_facts", 2.5),
                                         ("prism_head_seed_weight", -1.0), ("dense_head_novelty", -0.3),
                                         ("dense_head_novelty", float("inf")), ("bridge_pool", -1),
                                         ("bridge_pool", 2.5)])
def test_bad_prism_knobs_are_rejected_with_their_name(knob, value):
    with pytest.raises(ValueError, match=knob):
        QueryParam(mode="prism", **{knob: value})


def test_ppr_damping_default_depends_on_the_mode():
    from lightrag_prism.param import resolve_prism_knobs

    assert resolve_prism_knobs(QueryParam(mode="prism"))["ppr_damping"] == 0.5
    assert resolve_prism_knobs(QueryParam(mode="hybrid"))["ppr_damping"] == 0.85
    assert resolve_prism_knobs(QueryParam(mode="hybrid", ppr_damping=0.6))["ppr_damping"] == 0.6


def test_expansion_feed_spreads_a_share_of_the_seed_mass_by_specificity():
    seeds = np.array([0.6, 0.0, 0.0, 0.0])
    feed = np.array([0.0, 1.0, 1.0, 0.0])
    got = prism._ppr_feed(seeds, feed, num_chunks=np.array([1.0, 1.0, 3.0, 1.0]), weight=0.5)
    assert got == pytest.approx([0.6, 0.3 * 0.75, 0.3 * 0.25, 0.0])
    assert prism._ppr_feed(seeds, feed, np.ones(4), weight=0.0).tolist() == seeds.tolist()
    assert prism._ppr_feed(seeds, np.zeros(4), np.ones(4), weight=0.5).tolist() == seeds.tolist()
