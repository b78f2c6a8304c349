"""Context recognition filtering: the LLM names the retrieved items that are IRRELEVANT to the query, by item id.

Items (entities, relations, chunks, in ranking order) get short ids (``E3``, ``R7``, ``C2``) and are sent in
batches of ``param.recognition_batch_size``; the batches run concurrently (the instance's concurrency limit applies
inside its LLM function) through ``ctx.llm`` (the instance's LLM and LightRAG's cache). The answer must be JSON
``{"irrelevant": ["E3", "R7"]}``; ids not in the batch are ignored (exact match only).

Rules:

* the kept items keep their ranking order;
* multi-hop paths are preserved: on a path (seed -> ... -> expanded entity) every entity between two kept entities
  of that path is kept even if flagged, and so is every path relation whose endpoints are both kept;
* a removed chunk is also dropped from the kept items' ``source_id``, so LightRAG's chunk step (which derives
  chunks from the entities and relations) does not bring it back;
* a malformed answer or an LLM error keeps the whole batch and records a ``recognition`` fallback; without an LLM
  nothing is filtered and the fallback is recorded once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace

from ..llm import parse_json_answer, total_parser
from ..snapshot import GRAPH_FIELD_SEP, split_field
from ..result import Retrieval, ScoredItem, relation_id

logger = logging.getLogger(__name__)
STEP = "recognition"
PREFIX = {"entity": "E", "relation": "R", "chunk": "C"}
MAX_TEXT_CHARS = 400

RECOGNITION_SYSTEM_PROMPT = (
    "You filter retrieved context for a question-answering system. Flag only items that are clearly irrelevant "
    "to the question; when in doubt, keep the item. Items that could be a step in a multi-step answer are relevant."
)
RECOGNITION_PROMPT = """Question: {query}

Retrieved items:
{items}

Which items are irrelevant to the question? Answer with JSON only, listing item ids exactly as given:
{{"irrelevant": ["<id>", ...]}}
Answer {{"irrelevant": []}} if every item may help."""


def _short(text) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "..."


def item_line(short_id: str, item: ScoredItem) -> str:
    d = item.data
    if item.kind == "entity":
        body = f"entity {item.id} ({d.get('entity_type', 'UNKNOWN')}): {_short(d.get('description'))}"
    elif item.kind == "relation":
        body = f"relation {d.get('src_id')} -- {d.get('tgt_id')}: {_short(d.get('description'))}"
    else:
        body = f"passage: {_short(d.get('content'))}"
    return f"[{short_id}] {body}"


def short_ids(retrieval: Retrieval) -> list[tuple[str, ScoredItem]]:
    """(short id, item) for every item, entities then relations then chunks, each in ranking order."""
    out = []
    for kind, items in (("entity", retrieval.entities), ("relation", retrieval.relations), ("chunk", retrieval.chunks)):
        out += [(f"{PREFIX[kind]}{i + 1}", item) for i, item in enumerate(items)]
    return out


@total_parser()
def parse_irrelevant(answer: str | None, batch_ids: set[str]) -> set[str] | None:
    """The flagged ids of this batch, or None if the answer is not ``{"irrelevant": [ids]}``."""
    parsed = parse_json_answer(answer)
    if isinstance(parsed, list):
        parsed = {"irrelevant": parsed}
    if not isinstance(parsed, dict) or not isinstance(parsed.get("irrelevant"), list):
        return None
    if not all(isinstance(x, str) for x in parsed["irrelevant"]):
        return None
    return {x.strip() for x in parsed["irrelevant"]} & batch_ids


async def _judge_batch(ctx, number: int, batch: list[tuple[str, ScoredItem]]) -> set[str]:
    prompt = RECOGNITION_PROMPT.format(query=ctx.query, items="\n".join(item_line(s, it) for s, it in batch))
    answer = await ctx.llm(prompt, step=STEP, system_prompt=RECOGNITION_SYSTEM_PROMPT)
    if answer is None:  # ctx.llm recorded the LLM error
        return set()
    flagged = parse_irrelevant(answer, {s for s, _ in batch})
    if flagged is None:
        logger.warning("recognition: malformed answer for batch %d, keeping it: %r", number, answer[:200])
        ctx.retrieval.record_fallback(STEP, f"malformed answer for batch {number}: kept all {len(batch)} items")
        return set()
    return flagged


def _path_protected(retrieval: Retrieval, kept_entities: set[str]) -> tuple[set[str], set[str]]:
    """Entities and relation ids restored because they lie on a path between two kept entities."""
    entities, relations = set(), set()
    for item in retrieval.entities:
        path = item.path
        kept_at = [i for i, name in enumerate(path) if name in kept_entities]
        if len(kept_at) < 2:
            continue
        segment = path[kept_at[0]:kept_at[-1] + 1]
        entities.update(segment)
        for a, b in zip(segment, segment[1:]):
            relations.update((relation_id(a, b), relation_id(b, a)))
    return entities, relations


def _without_chunks(item: ScoredItem, dropped: set[str]) -> ScoredItem:
    sources = split_field(item.data.get("source_id"))
    if not dropped or not set(sources) & dropped:
        return item
    kept = GRAPH_FIELD_SEP.join(c for c in sources if c not in dropped)
    return replace(item, data={**item.data, "source_id": kept})


async def filter_retrieval(ctx, retrieval: Retrieval) -> Retrieval:
    """Remove the items the LLM flags as irrelevant (in place; see the module docstring for the rules)."""
    labelled = short_ids(retrieval)
    size = max(1, int(ctx.param.recognition_batch_size))
    meta = {"items": len(labelled), "batches": 0, "removed": 0}
    retrieval.metadata[STEP] = meta
    if not labelled:
        return retrieval
    if not ctx.llm_configured:
        retrieval.record_fallback(STEP, "no LLM configured: nothing filtered")
        return retrieval
    batches = [labelled[i:i + size] for i in range(0, len(labelled), size)]
    meta["batches"] = len(batches)
    flagged = set().union(*await asyncio.gather(*(_judge_batch(ctx, n, b) for n, b in enumerate(batches))))
    removed = {id(item) for s, item in labelled if s in flagged}
    kept_names = {e.id for e in retrieval.entities if id(e) not in removed}
    path_entities, path_relations = _path_protected(retrieval, kept_names)
    kept_names |= path_entities

    def keep(item: ScoredItem) -> bool:
        if id(item) not in removed:
            return True
        if item.kind == "entity":
            return item.id in path_entities
        if item.kind == "relation":
            ends = {item.data.get("src_id"), item.data.get("tgt_id")}
            return item.id in path_relations and ends <= kept_names
        return False

    before = len(labelled)
    dropped_chunks = {c.id for c in retrieval.chunks if not keep(c)}
    retrieval.entities = [_without_chunks(e, dropped_chunks) for e in retrieval.entities if keep(e)]
    retrieval.relations = [_without_chunks(r, dropped_chunks) for r in retrieval.relations if keep(r)]
    retrieval.chunks = [c for c in retrieval.chunks if keep(c)]
    meta["removed"] = before - len(short_ids(retrieval))
    meta["flagged"] = sorted(flagged, key=lambda s: (s[0], int(s[1:])))
    logger.info("recognition: %s", json.dumps(meta))
    return retrieval
