"""Mode specs of the benchmark command: ``mode:knob=value:...``."""

from __future__ import annotations

import pytest

from lightrag_prism.eval.bench import parse_mode_spec


def test_mode_spec_parses_literal_overrides():
    assert parse_mode_spec("naive") == ("naive", {})
    assert parse_mode_spec("hipporag:hipporag_dense_head=0:passage_node_weight=0.1:enable_fact_filter=False") == (
        "hipporag", {"hipporag_dense_head": 0, "passage_node_weight": 0.1, "enable_fact_filter": False})
    assert parse_mode_spec("hybrid:response_type=bullets") == ("hybrid", {"response_type": "bullets"})


@pytest.mark.parametrize("spec, message", [("hipporag:nope=1", "Unknown QueryParam"),
                                           ("hipporag:hipporag_dense_head", "expected knob=value")])
def test_mode_spec_rejects_unknown_or_malformed_knobs(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_mode_spec(spec)
