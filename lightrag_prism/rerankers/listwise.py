"""Sliding-window listwise LLM reranker (the LangProBe HoVer "two-stage ensemble" reranking step).

The documents are cut into windows of ``window_size`` with ``overlap`` documents shared by consecutive
windows (stride = window_size - overlap; the last window ends at the last document and may be shorter).
Each window is one LLM call returning a JSON ranking with 0-100 scores; a document seen in several
windows gets the mean of its window scores. Windows run concurrently under a semaphore.

Scores (0-100): the LLM's score for each document, clamped to [0, 100]; a document the LLM ranked but
did not score gets the window-local rank-derived score ``rank_scores(k)[position]`` (100 → 50).

Fallback (per window, logged and recorded in ``RerankOutcome.fallbacks``): when the answer cannot be
parsed, names an index outside the window, repeats one, misses one, or the LLM raises, that window's
documents get *retrieval-rank* scores, linear over the whole input from 100 (first retrieved) down to
50 (last). Being global, they keep retrieval order among themselves across windows: if every window
fails, the result is exactly the retrieval order.
"""

from __future__ import annotations

import asyncio
import logging

from .base import LLMCallable, Reranker, RerankOutcome, check_prompt_and_concurrency
from .parsing import ListwiseAnswer, parse_listwise_answer

logger = logging.getLogger(__name__)

MAX_SCORE = 100.0
RANK_SCORE_FLOOR = 50.0

LISTWISE_SYSTEM_PROMPT = (
    "You rank documents by how useful they are for answering or verifying a query. "
    "You reply with JSON only."
)

LISTWISE_PROMPT = """Rank the documents below by relevance to the query, most relevant first.

[[ ## query ## ]]
{query}

[[ ## documents ## ]]
{documents}

[[ ## instructions ## ]]
Use every document label from 1 to {count} exactly once in "ranking" (best first), and give each label a
relevance score from 0 (useless) to 100 (directly answers the query) in "scores".
Reply with one JSON object and nothing else, for example:
{{"ranking": [2, 1, 3], "scores": {{"2": 95, "1": 40, "3": 5}}}}
A list of objects is also accepted: [{{"index": 2, "score": 95}}, {{"index": 1, "score": 40}}, ...]

[[ ## ranking ## ]]
"""


def sliding_windows(n: int, window_size: int, overlap: int) -> list[range]:
    """Windows over ``range(n)``: ``[0, w)``, ``[s, s + w)``, ... with stride ``s = w - overlap``,
    stopping at the first window that reaches ``n`` (so the last one may be shorter).

    >>> [(r.start, r.stop) for r in sliding_windows(35, 10, 3)]
    [(0, 10), (7, 17), (14, 24), (21, 31), (28, 35)]
    """
    _check_window_knobs(window_size, overlap)
    windows: list[range] = []
    start = 0
    while start < n:
        stop = min(start + window_size, n)
        windows.append(range(start, stop))
        if stop == n:
            break
        start += window_size - overlap
    return windows


def _check_window_knobs(window_size: int, overlap: int) -> None:
    if window_size < 2:
        raise ValueError(f"window_size must be >= 2, got {window_size}")
    if not 0 <= overlap < window_size:
        raise ValueError(f"overlap must satisfy 0 <= overlap < window_size ({window_size}), got {overlap}")


def rank_scores(k: int) -> list[float]:
    """Scores for positions ``0..k-1``: linear from 100 (best) down to 50 (worst); ``[100]`` for k=1."""
    if k == 1:
        return [MAX_SCORE]
    step = (MAX_SCORE - RANK_SCORE_FLOOR) / (k - 1)
    return [MAX_SCORE - step * p for p in range(k)]


def format_documents(documents: list[str]) -> str:
    """Numbered documents, labels 1-based: ``[1] text``; whitespace runs collapse so one document is one line."""
    return "\n".join(f"[{label}] {' '.join(doc.split())}" for label, doc in enumerate(documents, start=1))


def validate_window_answer(answer: ListwiseAnswer | None, k: int) -> tuple[list[float] | None, str]:
    """Window-local scores (position = local index) or ``(None, reason)``.

    The ranking must name each label 1..k exactly once. Scores are clamped to [0, 100]; a document
    without a usable score gets the rank-derived score of its position.
    """
    if answer is None:
        return None, "unparseable answer"
    labels = answer.ranking
    if any(not 1 <= label <= k for label in labels):
        return None, f"invalid indices {sorted(set(l for l in labels if not 1 <= l <= k))}"
    if len(set(labels)) != len(labels):
        return None, "duplicate indices"
    if len(labels) != k:
        return None, f"missing indices {sorted(set(range(1, k + 1)) - set(labels))}"
    derived = rank_scores(k)
    scores = [0.0] * k
    for position, label in enumerate(labels):
        raw = answer.scores.get(label)
        scores[label - 1] = derived[position] if raw is None else min(MAX_SCORE, max(0.0, raw))
    return scores, ""


class ListwiseReranker(Reranker):
    """Sliding-window listwise reranking; see the module docstring for the algorithm and fallbacks."""

    name = "listwise"

    def __init__(
        self,
        llm: LLMCallable,
        window_size: int = 10,
        overlap: int = 3,
        max_concurrency: int = 4,
        prompt: str = LISTWISE_PROMPT,
        system_prompt: str | None = LISTWISE_SYSTEM_PROMPT,
    ) -> None:
        _check_window_knobs(window_size, overlap)
        check_prompt_and_concurrency(prompt, {"query": "", "documents": "", "count": 0}, max_concurrency)
        self.llm = llm
        self.window_size = window_size
        self.overlap = overlap
        self.max_concurrency = max_concurrency
        self.prompt = prompt
        self.system_prompt = system_prompt

    async def rerank(self, query: str, documents: list[str]) -> RerankOutcome:
        n = len(documents)
        windows = sliding_windows(n, self.window_size, self.overlap)
        semaphore = asyncio.Semaphore(self.max_concurrency)
        retrieval_scores = rank_scores(n) if n else []
        results = await asyncio.gather(
            *(self._score_window(query, documents, w, i, semaphore) for i, w in enumerate(windows))
        )
        totals, counts = [0.0] * n, [0] * n
        fallbacks: list[str] = []
        calls = 0
        for window, (scores, fallback, called) in zip(windows, results):
            calls += called
            if fallback:
                fallbacks.append(fallback)
                scores = [retrieval_scores[i] for i in window]
            for index, score in zip(window, scores):
                totals[index] += score
                counts[index] += 1
        means = [totals[i] / counts[i] for i in range(n)]
        order = sorted(range(n), key=lambda i: (-means[i], i))
        return RerankOutcome(order, means, fallbacks, calls, MAX_SCORE)

    async def _score_window(
        self, query: str, documents: list[str], window: range, number: int, semaphore: asyncio.Semaphore
    ) -> tuple[list[float] | None, str, int]:
        """``(window-local scores or None on fallback, fallback record or "", llm calls made)``."""
        k = len(window)
        if k == 1:  # nothing to compare
            return rank_scores(1), "", 0
        prompt = self.prompt.format(
            query=query, documents=format_documents([documents[i] for i in window]), count=k
        )
        try:
            async with semaphore:
                answer = await self.llm(prompt, system_prompt=self.system_prompt)
        except Exception as exc:  # noqa: BLE001 - any LLM failure degrades this window only
            return None, self._fallback(number, window, f"LLM error {type(exc).__name__}: {exc}"), 1
        scores, reason = validate_window_answer(parse_listwise_answer(answer), k)
        if scores is None:
            return None, self._fallback(number, window, reason), 1
        return scores, "", 1

    @staticmethod
    def _fallback(number: int, window: range, reason: str) -> str:
        logger.warning(
            "listwise window %d (docs %d-%d): %s; keeping retrieval order",
            number, window.start, window.stop - 1, reason,
        )
        return f"window {number}: {reason} → retrieval order"
