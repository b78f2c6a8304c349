"""The lexical channel of prism and hipporag: BM25 as a sparse product (checked against bm25s, an independent
implementation), each passage tokenized once, and the reciprocal-rank fusion with the dense scores."""

import numpy as np
import pytest

from lightrag_prism.eval.bm25 import BM25Index
from lightrag_prism.eval.datasets import Passage
from lightrag_prism.eval.metrics import reciprocal_rank_fusion
from lightrag_prism.graph.lexical import bm25_matrix, bm25_scores
from lightrag_prism.retrievers.views import lexical
from lightrag_prism.retrievers.views.lexical import Lexicon, LexicalIndex, fused_scores

WORDS = ("wal archive standby replica vacuum freeze autovacuum checkpoint buffer memory work_mem shared_buffers "
         "restore_command pg_stat_activity timeline slot sender receiver hot cold page index").split()


def random_corpus(rng, n):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 40)))) for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bm25_scores_equal_bm25s(seed):
    rng = np.random.default_rng(seed)
    texts = random_corpus(rng, 60)
    reference = BM25Index([Passage(str(i), "", text) for i, text in enumerate(texts)])
    index = LexicalIndex.build(Lexicon(), [str(i) for i in range(len(texts))], texts)
    for _ in range(20):
        query = " ".join(dict.fromkeys(rng.choice(WORDS, size=int(rng.integers(1, 6)))))  # each term once
        np.testing.assert_allclose(index.scores(query), reference.scores(query), rtol=1e-5, atol=1e-6)
    assert not index.scores("nothing here matches").any()


def test_an_empty_corpus_and_empty_passages_score_nothing():
    matrix, idf = bm25_matrix([], 0)
    assert matrix.shape == (0, 0) and bm25_scores(matrix, idf, np.array([0])).shape == (0,)
    index = LexicalIndex.build(Lexicon(), ["a", "b"], ["", "vacuum freeze"])
    assert index.scores("vacuum").tolist()[0] == 0.0 and index.scores("vacuum")[1] > 0


def test_a_passage_is_tokenized_once_and_a_gone_one_is_forgotten(monkeypatch):
    lexicon = Lexicon()
    calls = []
    real = lexical.terms
    monkeypatch.setattr(lexical, "terms", lambda text: calls.append(text) or real(text))
    lexicon.passage_rows(["a", "b"], ["vacuum freeze", "wal archive"])
    lexicon.passage_rows(["a", "b", "c"], ["vacuum freeze", "wal archive now", "hot standby"])
    assert calls == ["vacuum freeze", "wal archive", "wal archive now", "hot standby"]  # b's text changed
    lexicon.passage_rows(["c"], ["hot standby"])
    assert list(lexicon._rows) == ["c"] and len(calls) == 4
    assert lexicon.query_terms("Hot standby, and an unknown word").tolist() == [lexicon.vocabulary["hot"],
                                                                               lexicon.vocabulary["standby"]]


def test_fused_scores_rank_as_reciprocal_rank_fusion():
    rng = np.random.default_rng(5)
    dense = rng.random(40)
    bm25 = np.where(rng.random(40) < 0.4, rng.random(40) * 5, 0.0)
    fused = fused_scores(dense, bm25)
    expected = reciprocal_rank_fusion([list(np.argsort(-dense, kind="stable")),
                                       list(np.flatnonzero(bm25 > 0)[np.argsort(-bm25[bm25 > 0], kind="stable")])])
    assert list(np.argsort(-fused, kind="stable")) == expected
    assert fused.max() == 1.0 and fused.min() == 0.0
    assert fused_scores(np.zeros(0), np.zeros(0)).shape == (0,)
    assert (fused_scores(dense, np.zeros(40)).argsort() == dense.argsort()).all()  # no word matches: dense order
