"""Pairwise LLM tournament reranker (after IBM granite-io's ``llmrerank``), with its bugs fixed.

Algorithm for ``n`` documents (``all_pairs_below`` = 10 by default):

* ``n < all_pairs_below``: every pair is compared; documents are ranked by wins, ties by retrieval order.
* otherwise knockout rounds pair 1st vs last, 2nd vs second-to-last, ... of the current ranking
  (winners keep their match's seed slot) until fewer than ``all_pairs_below`` remain; then all
  pairs among the finalists. With an odd count the middle document gets a bye: nothing is dropped
  unjudged (granite-io drops the last document, and the middle one on odd halves).
* Every comparison is asked in both orders (A/B and B/A) to cancel position bias: a document gets
  1 point per order it wins, 0.5 for an order whose answer is unparseable or failed, and the match
  result is the mean. A split verdict (or a judge that always says "A") is a tie.
* A knockout tie advances the document earlier in retrieval order and is recorded in ``fallbacks``.
* Final ranking: finalists by wins (ties → retrieval order), then eliminated documents by the round
  they reached (later elimination ranks higher), within a round by retrieval order.
* Score of a finalist = ``rounds + wins / (finalists - 1)``, of a document eliminated in knockout
  round ``r`` (1-based) = ``r - 1``; ``score_scale = rounds + 1`` so ``relevance`` is in [0, 1].
* Judgements are cached per reranker by (query, passage A hash, passage B hash) — the order is part
  of the key. A repeated query makes 0 LLM calls. LLM exceptions are not cached.

LLM calls (``tournament_call_count``; 2 per comparison, one per order)::

    n    knockout rounds (matches x 2)        finalists   all pairs C(m,2) x 2   total
    1    -                                    1           0                      0
    2    -                                    2           2                      2
    3    -                                    3           6                      6
    5    -                                    5           20                     20
    9    -                                    9           72                     72
    10   10→5 (10)                            5           20                     30
    11   11→6 (5 matches + 1 bye: 10)         6           30                     40
    16   16→8 (16)                            8           56                     72
    21   21→11 (20), 11→6 (10)                6           30                     60
    32   32→16 (32), 16→8 (16)                8           56                     104
    40   40→20 (40), 20→10 (20), 10→5 (10)    5           20                     90

(granite-io asks each pair once and drops documents: 40 → 75 calls, 32 → 52. The total is not
monotone in n: 40 ends with 5 finalists, 32 with 8.)
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass, field

from .base import LLMCallable, Reranker, RerankOutcome, check_prompt_and_concurrency
from .parsing import parse_pairwise_verdict

logger = logging.getLogger(__name__)

# Based on the granite-io default prompt; the verdict letter is asked for first.
DEFAULT_PROMPT = """You are a smart and helpful AI assistant with in-depth knowledge about how people search for \
information using search engines. In this task, you are given two passages and a query; your job is to judge which \
passage is relatively more suitable to answer that query. The first passage starts with "Passage A" and the second \
passage starts with "Passage B". If neither passage answers the query directly, pick the one that has more relevant \
information.
Answer with the single letter A or B first, then optionally one short sentence of explanation.

Passage A:
{passage_a}

Passage B:
{passage_b}

Query: {query}

Preferred passage (A or B):"""

Verdict = str | None  # "A", "B" or None (tie / unparseable)


def tournament_call_count(n: int, all_pairs_below: int = 10) -> int:
    """LLM calls a cold-cache tournament over ``n`` documents makes (see the module table)."""
    calls, m = 0, n
    while m >= all_pairs_below:
        calls += 2 * (m // 2)
        m = m // 2 + m % 2
    return calls + m * (m - 1)  # C(m, 2) pairs x 2 orders


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Tally:
    """Per-``rerank`` bookkeeping; ``query_key``/``doc_keys`` are the texts' cache digests, hashed once per call."""

    semaphore: asyncio.Semaphore
    query_key: str
    doc_keys: list[str]
    calls: int = 0
    unparseable: int = 0
    errors: int = 0
    fallbacks: list[str] = field(default_factory=list)


class TournamentReranker(Reranker):
    """Pairwise tournament with position-debiased comparisons; see the module docstring."""

    name = "tournament"

    def __init__(
        self,
        llm: LLMCallable,
        max_concurrency: int = 4,
        all_pairs_below: int = 10,
        prompt: str = DEFAULT_PROMPT,
        system_prompt: str | None = None,
        cache_size: int = 10_000,
    ) -> None:
        check_prompt_and_concurrency(prompt, {"query": "", "passage_a": "", "passage_b": ""}, max_concurrency)
        if all_pairs_below < 2:
            raise ValueError(f"all_pairs_below must be >= 2, got {all_pairs_below}")
        self.llm = llm
        self.max_concurrency = max_concurrency
        self.all_pairs_below = all_pairs_below
        self.prompt = prompt
        self.system_prompt = system_prompt
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str, str], Verdict] = OrderedDict()

    def clear_cache(self) -> None:
        self._cache.clear()

    async def rerank(self, query: str, documents: list[str]) -> RerankOutcome:
        n = len(documents)
        if n < 2:
            return RerankOutcome(list(range(n)), [1.0] * n, [], 0, 1.0)
        tally = _Tally(asyncio.Semaphore(self.max_concurrency), _digest(query), [_digest(d) for d in documents])
        players, eliminated_in, rounds = list(range(n)), {}, 0
        while len(players) >= self.all_pairs_below:
            rounds += 1
            players, losers = await self._knockout_round(query, documents, players, rounds, tally)
            eliminated_in.update((doc, rounds) for doc in losers)
        wins = await self._all_pairs(query, documents, players, tally)
        order = sorted(players, key=lambda d: (-wins[d], d))
        order += sorted(eliminated_in, key=lambda d: (-eliminated_in[d], d))
        scores = [0.0] * n
        for doc in players:
            scores[doc] = rounds + wins[doc] / (len(players) - 1)
        for doc, lost_in in eliminated_in.items():
            scores[doc] = float(lost_in - 1)
        self._summarise(tally)
        return RerankOutcome(order, scores, tally.fallbacks, tally.calls, float(rounds + 1))

    async def _knockout_round(
        self, query: str, documents: list[str], players: list[int], round_no: int, tally: _Tally
    ) -> tuple[list[int], list[int]]:
        """One round: seed k vs seed m-1-k; the middle seed of an odd field gets a bye."""
        m = len(players)
        pairs = [(players[k], players[m - 1 - k]) for k in range(m // 2)]
        points = await asyncio.gather(*(self._match(query, documents, a, b, tally) for a, b in pairs))
        survivors, losers = [], []
        for (a, b), points_a in zip(pairs, points):
            if points_a == 0.5:
                winner = min(a, b)
                note = f"round {round_no}: tie between doc {a} and doc {b} → doc {winner} advances by retrieval order"
                logger.info("tournament %s", note)
                tally.fallbacks.append(note)
            else:
                winner = a if points_a > 0.5 else b
            survivors.append(winner)
            losers.append(b if winner == a else a)
        if m % 2:
            survivors.append(players[m // 2])
        return survivors, losers

    async def _all_pairs(
        self, query: str, documents: list[str], players: list[int], tally: _Tally
    ) -> dict[int, float]:
        pairs = list(itertools.combinations(players, 2))
        points = await asyncio.gather(*(self._match(query, documents, a, b, tally) for a, b in pairs))
        wins = {doc: 0.0 for doc in players}
        for (a, b), points_a in zip(pairs, points):
            wins[a] += points_a
            wins[b] += 1.0 - points_a
        return wins

    async def _match(self, query: str, documents: list[str], a: int, b: int, tally: _Tally) -> float:
        """Points of ``a`` against ``b`` in [0, 1]: mean over both presentation orders."""
        first, second = await asyncio.gather(
            self._judge(query, documents, a, b, tally),
            self._judge(query, documents, b, a, tally),
        )
        points_first = {"A": 1.0, "B": 0.0}.get(first, 0.5)  # a shown as A
        points_second = {"B": 1.0, "A": 0.0}.get(second, 0.5)  # a shown as B
        return (points_first + points_second) / 2

    async def _judge(self, query: str, documents: list[str], a: int, b: int, tally: _Tally) -> Verdict:
        """Verdict with ``documents[a]`` shown as passage A and ``documents[b]`` as passage B."""
        key = (tally.query_key, tally.doc_keys[a], tally.doc_keys[b])
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        prompt = self.prompt.format(query=query, passage_a=documents[a], passage_b=documents[b])
        tally.calls += 1
        try:
            async with tally.semaphore:
                answer = await self.llm(prompt, system_prompt=self.system_prompt)
        except Exception as exc:  # noqa: BLE001 - one failed judgement is a tie, not a failed query
            tally.errors += 1
            logger.warning("tournament judgement failed (%s: %s); counted as a tie", type(exc).__name__, exc)
            return None
        verdict = parse_pairwise_verdict(answer)
        if verdict is None:
            tally.unparseable += 1
            logger.debug("tournament: no unambiguous verdict in %r; counted as a tie", str(answer)[:200])
        self._cache[key] = verdict
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return verdict

    @staticmethod
    def _summarise(tally: _Tally) -> None:
        if tally.unparseable:
            note = f"{tally.unparseable} of {tally.calls} verdicts unparseable or ambiguous → counted as ties"
            logger.warning("tournament: %s", note)
            tally.fallbacks.append(note)
        if tally.errors:
            note = f"{tally.errors} of {tally.calls} LLM calls failed → counted as ties"
            tally.fallbacks.append(note)
