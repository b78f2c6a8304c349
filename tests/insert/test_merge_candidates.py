"""Merge-candidate search and decision parsing (pure), against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest

from lightrag_prism.insert.merging.agentic import candidate_pairs, parse_decision


def _vectors(n=400, d=16, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[1::7] = x[0::7][: len(x[1::7])] + 0.2 * rng.standard_normal((len(x[1::7]), d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute(x, rows, k, threshold):
    sims = x @ x.T
    pairs = {}
    for i in rows:
        s = sims[i].copy()
        s[i] = -np.inf
        for j in np.argsort(-s, kind="stable")[:k]:
            if s[j] >= threshold:
                key = (min(i, j), max(i, j))
                pairs[key] = max(pairs.get(key, -1), float(s[j]))
    return pairs


@pytest.mark.parametrize("rows", [np.arange(400), np.arange(350, 400), np.array([0, 7, 14])])
def test_exact_candidates_match_brute_force(rows):
    x = _vectors()
    got = candidate_pairs(x, rows, 3, 0.7, method="exact", block_size=17)
    want = _brute(x, rows, 3, 0.7)
    assert {(a, b) for a, b, _ in got} == set(want)
    assert all(np.isclose(s, want[(a, b)], atol=1e-5) for a, b, s in got)
    assert [s for *_, s in got] == sorted((s for *_, s in got), reverse=True)


def test_ivf_candidates_recall_near_duplicates():
    x = _vectors(n=3000, d=32)
    exact = {p[:2] for p in candidate_pairs(x, np.arange(3000), 5, 0.8, method="exact")}
    approx = {p[:2] for p in candidate_pairs(x, np.arange(3000), 5, 0.8, method="ivf")}
    assert len(exact) > 300
    assert len(approx & exact) / len(exact) >= 0.95


def test_unknown_method_lists_valid_ones():
    with pytest.raises(ValueError, match="auto, exact, ivf"):
        candidate_pairs(_vectors(), np.arange(3), 3, 0.5, method="dense")


@pytest.mark.parametrize("text,want", [
    ('{"merge": true, "confidence": 0.97, "canonical_name": "Acme"}', (True, 0.97, "Acme")),
    ('```json\n{"merge": "no", "confidence": "0.4"}\n```', (False, 0.4, None)),
    ('Sure! {"merge": true, "confidence": 7}', (True, 1.0, None)),
])
def test_parse_decision(text, want):
    d = parse_decision(text)
    assert (d["merge"], d["confidence"], d["canonical_name"]) == want


@pytest.mark.parametrize("text", [None, "", "merge them", '{"confidence": 0.9}', '{"merge": "maybe"}',
                                  '{"merge": true, "confidence": "high"}', '{"merge": true, "confidence": NaN}'])
def test_parse_decision_rejects_garbage(text):
    assert parse_decision(text) is None
