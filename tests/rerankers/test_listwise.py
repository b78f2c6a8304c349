import asyncio
import json
import random

import pytest

from lightrag_prism.rerankers import ListwiseReranker, sliding_windows
from lightrag_prism.rerankers.listwise import rank_scores, validate_window_answer
from lightrag_prism.rerankers.parsing import ListwiseAnswer

from .fakes import FakeLLM, Garbage, ListwiseJudge, Raising, make_docs, window_docs


def run(reranker, docs, query="q"):
    return asyncio.run(reranker.rerank(query, docs))


def test_window_arithmetic_35_docs():
    windows = sliding_windows(35, 10, 3)
    assert [(w.start, w.stop) for w in windows] == [(0, 10), (7, 17), (14, 24), (21, 31), (28, 35)]
    assert set().union(*map(set, windows)) == set(range(35))
    for prev, nxt in zip(windows, windows[1:]):
        assert len(set(prev) & set(nxt)) == 3


@pytest.mark.parametrize("n", [0, 1, 2, 9, 10, 11, 17, 40])
def test_windows_cover_everything(n):
    windows = sliding_windows(n, 10, 3)
    assert sorted(set().union(*map(set, windows))) == list(range(n))
    assert all(len(w) <= 10 for w in windows)
    assert len(windows) == (0 if n == 0 else 1 if n <= 10 else 1 + -(-(n - 10) // 7))


@pytest.mark.parametrize("window, overlap", [(1, 0), (5, 5), (5, 7), (5, -1)])
def test_knobs_are_validated(window, overlap):
    with pytest.raises(ValueError):
        ListwiseReranker(ListwiseJudge(), window_size=window, overlap=overlap)


def test_concurrency_knob_and_prompt_are_validated():
    with pytest.raises(ValueError):
        ListwiseReranker(ListwiseJudge(), max_concurrency=0)
    with pytest.raises(ValueError):
        ListwiseReranker(ListwiseJudge(), prompt="no placeholders")


@pytest.mark.parametrize("style", ["dict", "list"])
def test_ranks_35_docs_by_relevance(style):
    relevances = random.Random(7).sample(range(100), 35)
    judge = ListwiseJudge(style=style)
    outcome = run(ListwiseReranker(judge), make_docs(relevances))
    assert outcome.llm_calls == judge.calls == 5
    assert outcome.fallbacks == []
    assert sorted(outcome.order) == list(range(35))
    # mean of window scores == true relevance, so the order is exact
    assert outcome.order == sorted(range(35), key=lambda i: -relevances[i])
    assert outcome.scores == pytest.approx([float(r) for r in relevances])


class PositionScorer(FakeLLM):
    """Scores a document by its window-local label: label k → 10·k."""

    def answer(self, prompt):
        labels = [label for label, _ in window_docs(prompt)]
        return json.dumps({"ranking": labels[::-1], "scores": {str(k): 10 * k for k in labels}})


def test_overlapping_docs_get_the_mean():
    outcome = run(ListwiseReranker(PositionScorer()), make_docs([0] * 17))
    # doc 7: label 8 in window 0 (80) and label 1 in window 1 (10)
    assert outcome.scores[7] == pytest.approx(45.0)
    assert outcome.scores[9] == pytest.approx((100 + 30) / 2)
    assert outcome.scores[0] == pytest.approx(10.0)
    assert outcome.scores[16] == pytest.approx(100.0)


def test_invalid_window_falls_back_and_is_recorded():
    docs = make_docs(list(range(35)))
    docs[16] = docs[16] + " POISON"  # only in window 1 (7-16) and window 2 (14-23)
    outcome = run(ListwiseReranker(ListwiseJudge(poison="POISON")), docs)
    assert len(outcome.fallbacks) == 2
    assert outcome.fallbacks[0].startswith("window 1: invalid indices [99]")
    assert "retrieval order" in outcome.fallbacks[0]
    assert sorted(outcome.order) == list(range(35))
    assert outcome.llm_calls == 5
    # doc 10 lives only in window 1 → retrieval-rank score 100 - 50·10/34
    assert outcome.scores[10] == pytest.approx(rank_scores(35)[10])


@pytest.mark.parametrize("judge_cls", [Garbage, Raising])
def test_total_failure_keeps_retrieval_order(judge_cls):
    outcome = run(ListwiseReranker(judge_cls()), make_docs([5] * 23))
    assert outcome.order == list(range(23))
    assert len(outcome.fallbacks) == 3
    assert outcome.llm_calls == 3
    reason = "LLM error RuntimeError" if judge_cls is Raising else "unparseable answer"
    assert all(reason in f for f in outcome.fallbacks)


def test_one_raising_window_does_not_spoil_the_others():
    class FlakyJudge(ListwiseJudge):
        def answer(self, prompt):
            if "document 0 " in prompt:
                raise TimeoutError("slow")
            return super().answer(prompt)

    relevances = list(range(17))
    outcome = run(ListwiseReranker(FlakyJudge()), make_docs(relevances))
    assert outcome.fallbacks == ["window 0: LLM error TimeoutError: slow → retrieval order"]
    assert outcome.scores[0] == pytest.approx(100.0)  # retrieval-rank fallback score of doc 0
    assert outcome.scores[16] == pytest.approx(16.0)  # window 1 scored normally (doc 16 only there)
    assert outcome.order.index(16) < outcome.order.index(15)


def test_validation_rules():
    assert validate_window_answer(ListwiseAnswer([2, 1, 3], {2: 150, 1: -20}), 3) == (
        [0.0, 100.0, 50.0], ""
    )  # clamped; doc 3 unscored → rank-derived score of position 3 of 3
    assert validate_window_answer(ListwiseAnswer([1, 1, 2]), 3)[1] == "duplicate indices"
    assert validate_window_answer(ListwiseAnswer([1, 3]), 3)[1] == "missing indices [2]"
    assert validate_window_answer(ListwiseAnswer([0, 1, 2]), 3)[1] == "invalid indices [0]"
    assert validate_window_answer(None, 3)[1] == "unparseable answer"
    assert rank_scores(1) == [100.0] and rank_scores(3) == [100.0, 75.0, 50.0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 9, 10, 11, 16, 40])
def test_every_doc_kept(n):
    outcome = run(ListwiseReranker(ListwiseJudge()), make_docs([(i * 37) % 100 for i in range(n)]))
    assert sorted(outcome.order) == list(range(n))
    assert len(outcome.scores) == n
    assert outcome.llm_calls == len(sliding_windows(n, 10, 3)) - (1 if n == 1 else 0)


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_concurrency_never_exceeds_limit(limit):
    judge = ListwiseJudge(delay=0.005)
    outcome = run(ListwiseReranker(judge, max_concurrency=limit), make_docs(list(range(40))))
    assert outcome.llm_calls == 6
    assert judge.max_in_flight == limit
