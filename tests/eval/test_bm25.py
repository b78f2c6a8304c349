"""BM25 baseline: brute-force reference scores, ranking rules, offline use, MuSiQue smoke run."""

import math
import socket
from collections import Counter

import numpy as np
import pytest

from lightrag_prism.eval.bm25 import BM25Index, tokenize, top_k_indices
from lightrag_prism.eval.datasets import Passage, load_musique
from lightrag_prism.eval.metrics import recall_at_k

PASSAGES = [
    Passage.from_title_text("Paris", "Paris is the capital of France. Paris hosts the Louvre."),
    Passage.from_title_text("Berlin", "Berlin is the capital of Germany."),
    Passage.from_title_text("Louvre", "The Louvre is a museum in Paris, France."),
    Passage.from_title_text("Rhine", "The Rhine flows through Germany and the Netherlands."),
]


def _reference_lucene(passages, query, k1=1.5, b=0.75):
    """Lucene (>= 8) BM25: idf = ln(1 + (N - df + .5) / (df + .5)), tf part without the (k1 + 1) factor."""
    docs = tokenize([p.content for p in passages])
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    df = Counter(t for d in docs for t in set(d))
    out = []
    for d in docs:
        tf, score = Counter(d), 0.0
        for t in tokenize([query])[0]:
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf[t] / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(score)
    return np.array(out)


def test_tokenize_drops_english_stopwords():
    assert tokenize(["The Louvre is a museum in Paris"]) == [["louvre", "museum", "paris"]]


@pytest.mark.parametrize("query", ["capital of France", "Louvre museum Paris", "Germany Rhine river"])
def test_scores_match_reference(query):
    index = BM25Index(PASSAGES)
    assert np.allclose(index.scores(query), _reference_lucene(PASSAGES, query), atol=1e-5)


def test_search_ranks_and_ids():
    hits = BM25Index(PASSAGES).search("Louvre museum", k=2)
    assert [pid for pid, _ in hits] == [PASSAGES[2].id, PASSAGES[0].id]
    assert hits[0][1] > hits[1][1] > 0


def test_search_excludes_zero_scores_and_unknown_queries():
    index = BM25Index(PASSAGES)
    assert [pid for pid, _ in index.search("Netherlands", k=10)] == [PASSAGES[3].id]
    assert index.search("the of and", k=5) == []  # stopwords only
    assert index.search("zebra quantum", k=5) == []  # out of vocabulary
    assert index.search("", k=5) == []


def test_top_k_indices_tie_break_by_corpus_order():
    scores = np.array([0.0, 2.0, 1.0, 2.0, 2.0, 0.5])
    assert top_k_indices(scores, 2).tolist() == [1, 3]
    assert top_k_indices(scores, 4).tolist() == [1, 3, 4, 2]
    assert top_k_indices(scores, 10).tolist() == [1, 3, 4, 2, 5]
    assert top_k_indices(np.zeros(3), 2).tolist() == []


def test_invalid_arguments():
    with pytest.raises(ValueError, match="valid: robertson, lucene"):
        BM25Index(PASSAGES, method="okapi")
    with pytest.raises(ValueError):
        BM25Index([])


def test_works_without_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network disabled in test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert BM25Index(PASSAGES).search("capital Germany", k=1)[0][0] == PASSAGES[1].id


def test_musique_subset_recall_smoke():
    data = load_musique(with_openie=False).subset(20)
    index = BM25Index(data.passages)
    retrieved = [[pid for pid, _ in index.search(q.text, k=10)] for q in data.questions]
    gold = [q.gold_passage_ids for q in data.questions]
    r2, r5 = recall_at_k(gold, retrieved, 2), recall_at_k(gold, retrieved, 5)
    assert 0.2 < r2 <= r5 <= 1.0
