"""Shared setup for the LLM-rerank mode tests: a small PrismRAG corpus behind the scripted server."""

from __future__ import annotations

import re

from lightrag_prism import LightRAG
from tests.helpers import lightrag_kwargs
from tests.scripted_responder import messages_text
from tests.scripted_server import ScriptedServer

COLOURS = ["red", "blue", "green", "black", "white", "grey", "amber", "violet", "olive", "coral", "ivory", "teal"]
VALLEYS = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta", "Iota", "Kappa", "Lambda", "Mu"]
DOCS = [f"Document {i}: the {c} river flows through {v} valley near town number {i * 7 + 3}."
        for i, (c, v) in enumerate(zip(COLOURS, VALLEYS))]
QUERY = "Which river flows through the Alpha valley?"

_DOC_NUMBER = re.compile(r"Document (\d+):")
_PAIR = re.compile(r"Passage A:\n(.*?)\n\nPassage B:\n(.*?)\n\nQuery:", re.DOTALL)
_WINDOW_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)

LISTWISE_MARK = "[[ ## ranking ## ]]"
EXPANSION_MARK = "[[ ## queries ## ]]"
PAIRWISE_MARK = "Preferred passage (A or B):"


def doc_number(text: str) -> int:
    return int(_DOC_NUMBER.search(text).group(1))


def prefer_higher_number(body: dict) -> str:
    """Pairwise judge: the passage with the higher document number wins."""
    a, b = _PAIR.search(messages_text(body)).groups()
    return "A" if doc_number(a) > doc_number(b) else "B"


def listwise_llm_score(number: int) -> int:
    return 20 + 5 * number


def listwise_judge(body: dict) -> str:
    """Listwise judge: scores 20 + 5 * document number, ranking by that score."""
    text = messages_text(body)
    text = text[text.index("[[ ## documents ## ]]"):]
    labels = [(int(label), doc_number(doc)) for label, doc in _WINDOW_LINE.findall(text)]
    ranked = sorted(labels, key=lambda ln: -ln[1])
    return ('{"ranking": [%s], "scores": {%s}}' % (
        ", ".join(str(label) for label, _ in ranked),
        ", ".join(f'"{label}": {listwise_llm_score(n)}' for label, n in ranked)))


async def build_rag(server: ScriptedServer, workdir, docs=DOCS, **overrides) -> LightRAG:
    """A PrismRAG whose chunk store holds ``docs`` (one chunk each, inserted as a custom KG: no extraction calls)."""
    rag = LightRAG(**lightrag_kwargs(server, workdir, **overrides))
    await rag.initialize_storages()
    chunks = [{"content": doc, "source_id": f"src-{i}", "file_path": f"doc{i}.txt"} for i, doc in enumerate(docs)]
    await rag.ainsert_custom_kg({"chunks": chunks, "entities": [], "relationships": []})
    server.reset()
    return rag


def chunk_numbers(data: dict) -> list[int]:
    return [doc_number(c["content"]) for c in data["data"]["chunks"]]
