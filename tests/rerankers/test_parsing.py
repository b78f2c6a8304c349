import pytest

from lightrag_prism.rerankers.parsing import parse_listwise_answer, parse_pairwise_verdict


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("A", "A"),
        ("B", "B"),
        ("b.", "B"),
        ("passage a", "A"),
        ("Passage B", "B"),
        ("[[A]]", "A"),
        ("**B**", "B"),
        ("Answer: b", "B"),
        ("Preferred passage: (A)", "A"),
        ("The answer is A.", "A"),
        ("the better passage is passage b", "B"),
        ("B) it names the capital", "B"),
        ("A\nPassage A states the date directly, passage B does not.", "A"),
        ("Passage A is better than passage B.", "A"),
        # ties: both, neither, or nothing unambiguous; never the first character alone
        ("Both passages are relevant.", None),
        ("A or B, hard to say", None),
        ("Passage B is less relevant than passage A", None),
        ("The answer is a bit unclear", None),
        ("banana", None),
        ("", None),
        ("[[A]] ... actually **B**", None),
    ],
)
def test_pairwise_verdict(text, verdict):
    assert parse_pairwise_verdict(text) == verdict


@pytest.mark.parametrize(
    "text, ranking, scores",
    [
        ('{"ranking": [2, 1, 3], "scores": {"2": 90, "1": 50}}', [2, 1, 3], {2: 90.0, 1: 50.0}),
        ('Sure!\n```json\n{"ranking": [1, 2]}\n```', [1, 2], {}),
        ('here: {"ranking": [{"index": 2, "score": 80}, {"index": 1, "score": 20}]} ok', [2, 1], {2: 80.0, 1: 20.0}),
        ('[{"index": "2", "score": "70"}, {"index": 1}]', [2, 1], {2: 70.0}),
        ("[3, 1, 2]", [3, 1, 2], {}),
        ('{"ranking": [1, 2], "scores": [90, 10]}', [1, 2], {1: 90.0, 2: 10.0}),
        ("ranking: [2, 1] and scores: {2: 70, 1: 30} (truncated", [2, 1], {2: 70.0, 1: 30.0}),
    ],
)
def test_listwise_answer(text, ranking, scores):
    answer = parse_listwise_answer(text)
    assert answer is not None
    assert answer.ranking == ranking
    assert answer.scores == scores


@pytest.mark.parametrize("text", ["garbage", "", '{"ranking": "1,2"}', '{"order": [1]}', "__import__('os')"])
def test_listwise_garbage(text):
    assert parse_listwise_answer(text) is None
