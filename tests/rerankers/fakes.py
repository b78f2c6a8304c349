"""Deterministic fake async LLMs for the reranker tests and benchmark.

Documents carry their true relevance as ``rel=NN``; judges read it back from the prompt.
"""

from __future__ import annotations

import asyncio
import json
import re

_REL = re.compile(r"rel=(\d+)")
_PAIR = re.compile(r"Passage A:\n(.*?)\n\nPassage B:\n(.*?)\n\nQuery:", re.DOTALL)
_DOC_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def relevance(text: str) -> int:
    match = _REL.search(text)
    return int(match.group(1)) if match else 0


def make_docs(relevances: list[int]) -> list[str]:
    return [f"document {i} about things rel={r:02d}" for i, r in enumerate(relevances)]


def window_docs(prompt: str) -> list[tuple[int, str]]:
    """``[(label, text), ...]`` of a listwise window prompt."""
    return [(int(label), text) for label, text in _DOC_LINE.findall(prompt)]


def pair(prompt: str) -> tuple[str, str]:
    match = _PAIR.search(prompt)
    assert match, prompt
    return match.group(1), match.group(2)


class FakeLLM:
    """Counts calls and the peak number of calls in flight; ``answer(prompt)`` gives the reply."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.prompts: list[str] = []

    def answer(self, prompt: str) -> str:
        raise NotImplementedError

    async def __call__(self, prompt: str, system_prompt: str | None = None) -> str:
        self.calls += 1
        self.prompts.append(prompt)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            else:
                await asyncio.sleep(0)
            return self.answer(prompt)
        finally:
            self.in_flight -= 1


class RelevanceJudge(FakeLLM):
    """Pairwise: prefers the passage with the higher ``rel=``; equal → says "A" (position bias)."""

    def __init__(self, delay: float = 0.0, template: str = "{letter}") -> None:
        super().__init__(delay)
        self.template = template

    def answer(self, prompt: str) -> str:
        a, b = pair(prompt)
        return self.template.format(letter="B" if relevance(b) > relevance(a) else "A")


class AlwaysA(FakeLLM):
    """Pure position bias: the first passage always wins."""

    def answer(self, prompt: str) -> str:
        return "A"


class Garbage(FakeLLM):
    def answer(self, prompt: str) -> str:
        return "I cannot decide, both are lovely."


class Raising(FakeLLM):
    def answer(self, prompt: str) -> str:
        raise RuntimeError("backend down")


class ListwiseJudge(FakeLLM):
    """Listwise: ranks a window by ``rel=`` with score = rel (labels as shown, 1-based)."""

    def __init__(self, delay: float = 0.0, poison: str | None = None, style: str = "dict") -> None:
        super().__init__(delay)
        self.poison = poison
        self.style = style

    def answer(self, prompt: str) -> str:
        docs = window_docs(prompt)
        if self.poison and any(self.poison in text for _, text in docs):
            return json.dumps({"ranking": [99] + [label for label, _ in docs[1:]]})
        ranked = sorted(docs, key=lambda item: -relevance(item[1]))
        if self.style == "list":
            return json.dumps([{"index": label, "score": relevance(text)} for label, text in ranked])
        scores = {str(label): relevance(text) for label, text in ranked}
        return "Here you go:\n" + json.dumps({"ranking": [label for label, _ in ranked], "scores": scores})
