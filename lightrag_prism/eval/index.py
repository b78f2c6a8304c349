"""Index a benchmark corpus into LightRAG's storages without an LLM.

Passages go through LightRAG's normal insert pipeline, so every storage (chunks, graph, vectors, per-document
entity lists, doc status) is written exactly as for real documents. The "LLM" answering the extraction prompts
replays precomputed OpenIE triples when the dataset has them (MuSiQue: GPT-3.5-turbo-1106 output published by
HippoRAG), otherwise it is the offline extractor (``insert/extraction``), as for any user without an LLM.

Each passage is one document and one chunk (``split_by_character_only`` with a separator no passage contains keeps
a long passage whole, HippoRAG's protocol), inserted in batches of ``batch_size`` documents per ``ainsert``.
LightRAG refuses a chunk above its ``chunk_token_size``: the bench fits that size to the longest passage
(:func:`long_passages` lists the ones above the default).
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict

from ..insert.offline_llm import COMPLETE, FENCED_INPUT, TUPLE_DELIMITER, offline_llm_complete
from ..progress import insert_progress
from .datasets import Dataset, OpenIE

logger = logging.getLogger(__name__)

PASSAGE_SEPARATOR = "\n\n<|passage|>\n\n"
_DELIM = TUPLE_DELIMITER
_BAD_CHARS = re.compile(r"[<>|\n\r\t]+")


def _clean(text: str) -> str:
    return _BAD_CHARS.sub(" ", str(text)).strip()


def openie_rows(openie: OpenIE) -> str:
    """The OpenIE output of one passage as rows in LightRAG's extraction format."""
    facts: dict[str, list[str]] = defaultdict(list)
    relations = []
    for s, p, o in openie.triples:
        s, p, o = _clean(s), _clean(p), _clean(o)
        if not s or not o or s.lower() == o.lower():
            continue
        fact = f"{s} {p} {o}."
        facts[s].append(fact)
        facts[o].append(fact)
        relations.append(f"relation{_DELIM}{s}{_DELIM}{o}{_DELIM}{p or 'related to'}{_DELIM}{fact}")
    names = list(dict.fromkeys([_clean(e) for e in openie.entities] + list(facts)))
    entities = [f"entity{_DELIM}{n}{_DELIM}concept{_DELIM}{' '.join(facts.get(n, [])) or n}" for n in names if n]
    return "\n".join(entities + relations + [COMPLETE])


def openie_replay_llm(dataset: Dataset):
    """An ``llm_model_func`` answering extraction prompts from the dataset's OpenIE (offline stand-in otherwise)."""
    by_content = {content: dataset.openie.get(pid) for content, pid in passage_lookup(dataset).items()}

    async def replay(prompt: str, system_prompt: str | None = None, history_messages=None, **kwargs) -> str:
        match = FENCED_INPUT.search(prompt)
        if match and "Knowledge Graph Specialist" in (system_prompt or ""):
            openie = by_content.get(match.group(1).strip())
            if openie is not None:
                return openie_rows(openie)
        return await offline_llm_complete(prompt, system_prompt, history_messages, **kwargs)

    replay.is_offline_stand_in = True
    return replay


async def index_passages(rag, dataset: Dataset, batch_size: int = 500, progress: bool = True,
                         batch_seconds: list[float] | None = None) -> int:
    """Insert the dataset's passages that the instance does not hold yet; returns how many were inserted. The
    seconds each batch took are appended to ``batch_seconds`` if given."""
    ids = [f"{dataset.name}-{p.id}" for p in dataset.passages]
    present = await rag.full_docs.get_by_ids(ids)
    todo = [(doc_id, p) for doc_id, p, have in zip(ids, dataset.passages, present) if not have]
    async with insert_progress(rag, len(todo), f"indexing {dataset.name}", unit="passage", disable=not progress):
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            started = time.perf_counter()
            await rag.ainsert([p.content for _, p in batch], split_by_character=PASSAGE_SEPARATOR,
                              split_by_character_only=True, ids=[doc_id for doc_id, _ in batch],
                              file_paths=[f"{dataset.name}/{p.id}" for _, p in batch])
            if batch_seconds is not None:
                batch_seconds.append(round(time.perf_counter() - started, 1))
    return len(todo)


def long_passages(dataset: Dataset, tokenizer, limit: int) -> list[tuple[str, int]]:
    """(passage id, tokens) of the passages longer than ``limit`` tokens, longest first."""
    counts = [(p.id, len(tokenizer.encode(p.content))) for p in dataset.passages]
    return sorted(((pid, n) for pid, n in counts if n > limit), key=lambda item: -item[1])


def passage_lookup(dataset: Dataset) -> dict[str, str]:
    """chunk content -> passage id, to map retrieved chunks back to the benchmark's passages."""
    return {p.content.strip(): p.id for p in dataset.passages}
