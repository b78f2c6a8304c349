import asyncio
import random
from math import comb

import pytest

from lightrag_prism.rerankers import TournamentReranker, tournament_call_count

from .fakes import AlwaysA, FakeLLM, Garbage, Raising, RelevanceJudge, make_docs, pair, relevance

NS = [1, 2, 3, 9, 10, 11, 16, 40]


def run(reranker, docs, query="q"):
    return asyncio.run(reranker.rerank(query, docs))


def shuffled(n, seed=0):
    return random.Random(seed).sample(range(100), n)


def test_call_count_formula():
    assert tournament_call_count(5) == 2 * comb(5, 2) == 20
    assert tournament_call_count(10) == 10 + 2 * comb(5, 2) == 30  # 10 → 5, then all pairs
    assert tournament_call_count(16) == 16 + 2 * comb(8, 2) == 72  # 16 → 8, then all pairs
    assert tournament_call_count(40) == 40 + 20 + 10 + 2 * comb(5, 2) == 90  # 40 → 20 → 10 → 5
    assert tournament_call_count(11) == 10 + 2 * comb(6, 2) == 40  # 5 matches + bye → 6
    table = {1: 0, 2: 2, 3: 6, 5: 20, 9: 72, 10: 30, 11: 40, 16: 72, 21: 60, 32: 104, 40: 90}
    assert {n: tournament_call_count(n) for n in table} == table


@pytest.mark.parametrize("n", NS + [5, 21, 32])
def test_actual_calls_match_formula(n):
    judge = RelevanceJudge()
    outcome = run(TournamentReranker(judge), make_docs(shuffled(n)))
    assert outcome.llm_calls == judge.calls == tournament_call_count(n)


@pytest.mark.parametrize("n", NS)
def test_every_doc_kept(n):
    outcome = run(TournamentReranker(RelevanceJudge()), make_docs(shuffled(n, seed=n)))
    assert sorted(outcome.order) == list(range(n))
    assert len(outcome.scores) == n
    ranked_scores = [outcome.scores[i] for i in outcome.order]
    assert ranked_scores == sorted(ranked_scores, reverse=True)
    assert all(0.0 <= outcome.relevance(i) <= 1.0 for i in range(n))


@pytest.mark.parametrize("n", [2, 3, 5, 9])
def test_all_pairs_is_exact_below_ten(n):
    relevances = shuffled(n, seed=3)
    outcome = run(TournamentReranker(RelevanceJudge()), make_docs(relevances))
    assert outcome.order == sorted(range(n), key=lambda i: -relevances[i])
    assert outcome.fallbacks == []


@pytest.mark.parametrize("n", [10, 11, 16, 40])
def test_knockout_keeps_the_best_on_top(n):
    relevances = shuffled(n, seed=5)
    outcome = run(TournamentReranker(RelevanceJudge()), make_docs(relevances))
    best = max(range(n), key=lambda i: relevances[i])
    assert outcome.order[0] == best
    assert outcome.relevance(best) == 1.0


@pytest.mark.parametrize("n", NS)
def test_position_bias_cancels_to_retrieval_order(n):
    judge = AlwaysA()
    outcome = run(TournamentReranker(judge), make_docs([50] * n))
    assert outcome.order == list(range(n))
    knockout_ties = [f for f in outcome.fallbacks if "tie between" in f]
    assert len(knockout_ties) == tournament_call_count(n) // 2 - comb(len(_finalists(n)), 2)


def _finalists(n, below=10):
    while n >= below:
        n = n // 2 + n % 2
    return range(n)


def test_both_orders_are_asked():
    judge = RelevanceJudge()
    run(TournamentReranker(judge), make_docs([1, 2]))
    shown = {pair(p) for p in judge.prompts}
    a, b = make_docs([1, 2])
    assert shown == {(a, b), (b, a)}


@pytest.mark.parametrize("judge_cls, note", [(Garbage, "unparseable"), (Raising, "failed")])
def test_unusable_judges_give_ties(judge_cls, note):
    outcome = run(TournamentReranker(judge_cls()), make_docs([10, 90, 50, 70, 20]))
    assert outcome.order == [0, 1, 2, 3, 4]
    assert outcome.llm_calls == 20
    assert any(note in f and "ties" in f for f in outcome.fallbacks)


def test_odd_field_middle_doc_gets_a_bye():
    # n=11: seeds (0,10) (1,9) (2,8) (3,7) (4,6) play, seed 5 advances unjudged and then wins the finals
    relevances = [10] * 11
    relevances[5] = 99
    judge = RelevanceJudge()
    outcome = run(TournamentReranker(judge), make_docs(relevances))
    assert outcome.order[0] == 5
    first_round = judge.prompts[:10]
    assert not any("rel=99" in p for p in first_round)


def test_knockout_order_finalists_then_later_eliminations():
    relevances = list(range(16, 0, -1))  # doc 0 best ... doc 15 worst: retrieval order is already right
    outcome = run(TournamentReranker(RelevanceJudge()), make_docs(relevances))
    assert outcome.order == list(range(16))
    assert outcome.scores[:8] == pytest.approx([1 + (7 - k) / 7 for k in range(8)])
    assert outcome.scores[8:] == [0.0] * 8
    assert outcome.score_scale == 2.0


def test_cache_makes_a_repeated_query_free():
    judge = RelevanceJudge()
    reranker = TournamentReranker(judge)
    docs = make_docs(shuffled(16))
    first = run(reranker, docs)
    second = run(reranker, docs)
    assert first.llm_calls == 72 and second.llm_calls == 0
    assert second.order == first.order and second.scores == first.scores
    assert judge.calls == 72
    assert run(reranker, docs, query="another query").llm_calls == 72
    reranker.clear_cache()
    assert run(reranker, docs).llm_calls == 72



@pytest.mark.parametrize("n", [5, 16])
def test_each_text_is_hashed_once_per_rerank(n, monkeypatch):
    from lightrag_prism.rerankers import tournament

    hashed = []
    digest = tournament._digest
    monkeypatch.setattr(tournament, "_digest", lambda text: hashed.append(text) or digest(text))
    docs = make_docs(shuffled(n))
    outcome = run(TournamentReranker(RelevanceJudge()), docs, query="q")
    assert outcome.llm_calls == tournament_call_count(n)  # many comparisons, one digest per text
    assert sorted(hashed) == sorted(docs + ["q"])

def test_failed_calls_are_not_cached():
    judge = Raising()
    reranker = TournamentReranker(judge)
    run(reranker, make_docs([1, 2, 3]))
    assert run(reranker, make_docs([1, 2, 3])).llm_calls == 6


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_concurrency_never_exceeds_limit(limit):
    judge = RelevanceJudge(delay=0.002)
    run(TournamentReranker(judge, max_concurrency=limit), make_docs(shuffled(16)))
    assert judge.max_in_flight == limit


@pytest.mark.parametrize(
    "template", ["{letter}", "**{letter}**", "[[{letter}]]", "Passage {letter}", "Answer: {letter}", "passage {letter}"]
)
def test_verdict_formats(template):
    relevances = [3, 9, 1, 7]
    judge = RelevanceJudge(template=template)
    outcome = run(TournamentReranker(judge), make_docs(relevances))
    assert outcome.order == [1, 3, 0, 2]


def test_lowercase_verdicts():
    class Lower(RelevanceJudge):
        def answer(self, prompt):
            return "answer: " + super().answer(prompt).lower() + " because it is closer"

    assert run(TournamentReranker(Lower()), make_docs([3, 9, 1, 7])).order == [1, 3, 0, 2]


def test_knobs_validated():
    with pytest.raises(ValueError):
        TournamentReranker(AlwaysA(), max_concurrency=0)
    with pytest.raises(ValueError):
        TournamentReranker(AlwaysA(), all_pairs_below=1)
    with pytest.raises(ValueError):
        TournamentReranker(AlwaysA(), prompt="{query} only")


def test_custom_all_pairs_threshold():
    judge = RelevanceJudge()
    outcome = run(TournamentReranker(judge, all_pairs_below=4), make_docs(shuffled(9)))
    assert outcome.llm_calls == tournament_call_count(9, all_pairs_below=4) == 8 + 4 + 6
    assert sorted(outcome.order) == list(range(9))


def test_split_verdict_is_a_tie_and_half_verdict_counts_half():
    class HalfBlind(FakeLLM):
        """Right when the better passage is shown first, unparseable otherwise."""

        def answer(self, prompt):
            a, b = pair(prompt)
            return "A" if relevance(a) > relevance(b) else "no idea"

    split = run(TournamentReranker(AlwaysA()), make_docs([10, 90]))
    assert split.order == [0, 1] and split.scores == [0.5, 0.5]
    half = run(TournamentReranker(HalfBlind()), make_docs([10, 90]))
    assert half.order == [1, 0] and half.scores == [0.25, 0.75]
    assert half.fallbacks == ["1 of 2 verdicts unparseable or ambiguous → counted as ties"]


def test_prompt_with_stray_braces_is_rejected():
    with pytest.raises(ValueError, match="format template"):
        TournamentReranker(AlwaysA(), prompt="{query} {passage_a} {passage_b} {oops}")
