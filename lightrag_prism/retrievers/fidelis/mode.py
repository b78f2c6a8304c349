"""The ``fidelis`` mode: LLM-planned beam search over knowledge-graph paths with deductive termination (FiDeLiS).

1. **Plan** (one LLM call): planning steps, keywords, declarative statement. Each keyword is embedded once, as its
   own vector, and reused at every step. Without an LLM (or on an unreadable plan) the offline keyword extractor
   gives the keywords and the query is the statement.
2. **Topic entities**: ``param.topic_entities`` checked against the snapshot (unknown names are reported in
   ``unknown_topic_entities``), else linked from the keywords by cosine against the entity vectors.
3. **Beam search** (``max_path_length`` steps): all relations of the beams' last nodes are scored at once
   (:mod:`.scoring`); the best ``beam_top_n`` form the candidate pool; the LLM picks ``beam_width`` of them
   guided by the plan (validated, filled up / replaced by score order on bad answers). From the second step on the
   verifier asks whether the paths so far entail the statement; "yes" stops the search. Paths never revisit a node.
   The verifier runs concurrently with the next expansion's scoring, the beam choice with the next step's prefetch.
4. **Output**: the chosen paths' relations (in path order), entities and source chunks, ranked by path score (mean
   hop score) then query similarity; without an LLM the chunks are the dense ranking fused with the paths'
   (:mod:`.output`). LightRAG then builds the context and answers as for its own KG modes, keeping that chunk
   order (``OWN_CHUNK_RANKING``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ...context import QueryContext
from ...keywords import extract_keywords
from ...result import Retrieval
from ...snapshot import GRAPH_FIELD_SEP, GraphSnapshot
from ...vectors import entity_and_relation_matrices
from . import prompts
from .output import assemble
from .scoring import HopScorer, Path, top_candidates

KIND = "kg"
OWN_CHUNK_RANKING = True  # LightRAG keeps this chunk order (path chunks, or the fused ranking; output.py)
LINKS_PER_KEYWORD = 2  # entities linked per keyword when no topic entity is given
MAX_LINKED_TOPICS = 5

logger = logging.getLogger(__name__)


def reads_keywords(param) -> bool:
    """FiDeLiS never reads LightRAG's ll/hl keywords: its plan gives its own (offline ones without an LLM)."""
    return False


@dataclass
class _Search:
    """Per-query state: the context, snapshot, scorer, plan and what gets reported."""

    ctx: QueryContext
    snapshot: GraphSnapshot
    scorer: HopScorer
    plan: prompts.Plan
    use_llm: bool
    llm_calls: int = 0
    choices: list[dict] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)

    async def ask(self, prompt: str, step: str) -> str | None:
        self.llm_calls += 1
        return await self.ctx.llm(prompt, step=step)

    def path_text(self, path: Path) -> str:
        """``A -> rel -> B -> rel2 -> C`` in traversal order (LightRAG's graph is undirected)."""
        hops = (f" -> {relation_label(self.snapshot, e)} -> {self.snapshot.node_ids[b]}"
                for e, b in zip(path.edges, path.nodes[1:]))
        return self.snapshot.node_ids[path.nodes[0]] + "".join(hops)


def relation_label(snapshot: GraphSnapshot, e: int) -> str:
    data = snapshot.edge_data[e]
    label = str(data.get("keywords") or data.get("description") or "related to")
    return label.split(GRAPH_FIELD_SEP)[0][:120]


def path_triples(snapshot: GraphSnapshot, path: Path) -> list[list[str]]:
    names = [snapshot.node_ids[n] for n in path.nodes]
    return [[names[i], relation_label(snapshot, e), names[i + 1]] for i, e in enumerate(path.edges)]


# --- 1. plan ------------------------------------------------------------------------------------------------------
def offline_plan(query: str) -> prompts.Plan:
    high, low = extract_keywords(query)
    return prompts.Plan(keywords=list(dict.fromkeys(low + high)), declarative_statement=query, parsed="fallback")


async def make_plan(ctx: QueryContext) -> tuple[prompts.Plan, int]:
    """The plan and the number of LLM calls made for it."""
    if not ctx.llm_configured:
        ctx.retrieval.record_fallback(
            "fidelis", "no LLM configured: offline keywords, beams chosen by score, no termination check")
        return offline_plan(ctx.query), 0
    answer = await ctx.llm(prompts.PLAN_PROMPT.format(question=ctx.query), step=prompts.PLAN_STEP)
    plan = prompts.parse_plan(answer)
    if plan is None:
        if answer is not None:
            ctx.retrieval.record_fallback(prompts.PLAN_STEP, "unreadable plan: offline keywords")
        return offline_plan(ctx.query), 1
    plan.declarative_statement = plan.declarative_statement or ctx.query
    return plan, 1


# --- 2. topic entities --------------------------------------------------------------------------------------------
def resolve_topics(snapshot: GraphSnapshot, names: list[str]) -> tuple[list[int], list[str]]:
    """Indices of the given topic entities (exact, then LightRAG-normalised, then case-insensitive name)."""
    from lightrag.utils import normalize_entity_name

    if "casefold_index" not in snapshot.derived:
        snapshot.derived["casefold_index"] = {n.casefold(): i for n, i in reversed(snapshot.node_index.items())}
    folded = snapshot.derived["casefold_index"]
    found, unknown = [], []
    for name in names:
        key = str(name)
        i = snapshot.node_index.get(key)
        if i is None:
            i = snapshot.node_index.get(normalize_entity_name(key) or key, folded.get(key.strip().casefold()))
        (found.append(i) if i is not None else unknown.append(key))
    return list(dict.fromkeys(found)), unknown


def link_topics(entity_vecs: np.ndarray, keyword_vecs: np.ndarray, scorer: HopScorer) -> list[int]:
    """Top ``LINKS_PER_KEYWORD`` entities per keyword, best similarity first, at most ``MAX_LINKED_TOPICS``."""
    if not len(keyword_vecs) or not len(entity_vecs):
        return []
    sims = entity_vecs @ keyword_vecs.T  # (N, k)
    scorer._ent[:] = sims.max(axis=1)  # the same values ent_sim would compute: seed the cache
    k = min(LINKS_PER_KEYWORD, len(entity_vecs))
    top = np.argpartition(-sims, k - 1, axis=0)[:k].ravel()
    top = np.unique(top)
    top = top[np.argsort(-scorer._ent[top], kind="stable")]
    return top[:MAX_LINKED_TOPICS].tolist()


# --- 3. beam search -----------------------------------------------------------------------------------------------
async def verify(search: _Search, beams: list[Path]) -> bool:
    prompt = prompts.VERIFY_PROMPT.format(declarative_statement=search.plan.declarative_statement,
                                          reasoning_paths=prompts.format_paths([search.path_text(b) for b in beams]))
    return prompts.parse_yes_no(await search.ask(prompt, prompts.VERIFY_STEP))


async def choose(search: _Search, pool: list[Path], step: int, last: bool) -> list[int]:
    param = search.ctx.param
    if len(pool) <= param.beam_width:
        search.choices.append({"step": step, "source": "all", "indices": list(range(len(pool)))})
        return list(range(len(pool)))
    prefetch = (asyncio.to_thread(search.scorer.prefetch, np.array([p.nodes[-1] for p in pool]))
                if not last else asyncio.sleep(0))
    if not search.use_llm:
        await prefetch
        choice = prompts.BeamChoice(list(range(param.beam_width)), "score")
    else:
        prompt = prompts.BEAM_PROMPT.format(
            beam_width=param.beam_width, question=search.ctx.query,
            plan="\n".join(f"- {s}" for s in search.plan.planning_steps) or "- (none)",
            reasoning_paths=prompts.format_paths([search.path_text(p) for p in pool]))
        answer, _ = await asyncio.gather(search.ask(prompt, prompts.BEAM_STEP), prefetch)
        choice = prompts.validate_beam_choice(answer, len(pool), param.beam_width)
        if choice.source == "score" and answer is not None:
            search.ctx.retrieval.record_fallback(prompts.BEAM_STEP, f"step {step}: unreadable beam choice, "
                                                                    "best-scored paths taken")
    search.choices.append({"step": step, "source": choice.source, "indices": choice.indices,
                           "dropped": choice.dropped})
    return choice.indices


async def beam_search(search: _Search, topics: list[int]) -> tuple[list[Path], str, int]:
    """Returns (final paths, stopped_by, expansion steps done)."""
    param, scorer = search.ctx.param, search.scorer
    beams = [Path([t]) for t in topics]
    for step in range(param.max_path_length):
        started = time.perf_counter()
        frontier = np.array([b.nodes[-1] for b in beams], dtype=np.int64)
        expansion = asyncio.to_thread(scorer.expand, frontier, [np.array(b.nodes) for b in beams])
        if step > 0 and search.use_llm:
            done, cands = await asyncio.gather(verify(search, beams), expansion)
            if done:
                search.step_seconds.append(time.perf_counter() - started)
                return beams, "termination", step
        else:
            cands = await expansion
        top = top_candidates(cands, param.beam_top_n)
        if not len(top):
            search.step_seconds.append(time.perf_counter() - started)
            return beams, "dead_end", step
        pool = [beams[b].extend(e, n, s) for b, e, n, s in zip(
            cands["beam"][top].tolist(), cands["edge"][top].tolist(), cands["node"][top].tolist(),
            cands["score"][top].tolist())]
        chosen = await choose(search, pool, step, last=step == param.max_path_length - 1)
        beams = [pool[i] for i in chosen]
        search.step_seconds.append(time.perf_counter() - started)
    return beams, "max_length", param.max_path_length


# --- the mode -----------------------------------------------------------------------------------------------------
async def retrieve(ctx: QueryContext) -> Retrieval:
    started = time.perf_counter()
    snapshot = await ctx.snapshot()
    plan, plan_calls = await make_plan(ctx)
    (entity_vecs, relation_vecs), keyword_vecs = await asyncio.gather(
        entity_and_relation_matrices(ctx.rag, snapshot), ctx.embed(plan.keywords))
    scorer = HopScorer(snapshot.adj, snapshot.entry_edge, entity_vecs, relation_vecs, keyword_vecs,
                       ctx.param.lookahead_alpha)
    search = _Search(ctx, snapshot, scorer, plan, use_llm=ctx.llm_configured, llm_calls=plan_calls)
    meta = ctx.retrieval.metadata
    topics, unknown = resolve_topics(snapshot, list(ctx.param.topic_entities or []))
    meta["unknown_topic_entities"] = unknown
    if not topics and snapshot.num_nodes:
        if ctx.param.topic_entities:
            ctx.retrieval.record_fallback("fidelis", "no given topic entity is in the graph: linked from keywords")
        topics = link_topics(entity_vecs, keyword_vecs, scorer)
        meta["topic_entities_linked"] = True
    paths, stopped_by, steps = await beam_search(search, topics) if topics else ([], "no_topic_entity", 0)
    paths = sorted((p for p in paths if p.edges), key=lambda p: -p.score)
    await assemble(ctx, snapshot, scorer, paths, relation_label, topics)
    meta.update({
        "stopped_by": stopped_by, "steps": steps, "topic_entities": [snapshot.node_ids[t] for t in topics],
        "paths": [path_triples(snapshot, p) for p in paths],
        "path_scores": [p.score for p in paths], "plan": plan.planning_steps, "keywords": plan.keywords,
        "declarative_statement": plan.declarative_statement, "plan_parsed": plan.parsed,
        "beam_choices": search.choices, "llm_calls": search.llm_calls, "step_seconds": search.step_seconds,
        "seconds": time.perf_counter() - started,
    })
    logger.debug("fidelis: %d paths, stopped by %s after %d steps", len(paths), stopped_by, steps)
    return ctx.retrieval

