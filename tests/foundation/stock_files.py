"""A plain LightRAG instance indexes two documents into a working dir: run as a script, in a fresh process.

``python tests/foundation/stock_files.py <working dir> plain|plugin`` writes the workspace ``plain`` of the working
dir. With ``plugin`` the process first imports lightrag_prism and indexes the same documents with a PrismRAG in
``<working dir>-prism`` (its storages stay open
while the plain instance works), so the plain instance's files can be compared with those of a process that never
imported the plugin. LightRAG only: its own tokenizer interface, a scripted extraction, a hashed embedder.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys

import numpy as np

DOCUMENTS = ["Alpha Works builds river barges in Port Wenna. Its founder is Ines Vale.",
             "Beta Yard repairs the barges of Alpha Works. Beta Yard is in Port Wenna too."]
EXTRACTION = ("entity<|#|>Alpha Works<|#|>organization<|#|>Alpha Works builds barges.\n"
              "entity<|#|>Port Wenna<|#|>location<|#|>Port Wenna is a harbour town.\n"
              "relation<|#|>Alpha Works<|#|>Port Wenna<|#|>based in<|#|>Alpha Works is in Port Wenna.\n"
              "<|COMPLETE|>")


class CharTokenizer:
    def encode(self, content: str) -> list[int]:
        return [ord(c) for c in content]

    def decode(self, tokens: list[int]) -> str:
        return "".join(chr(t) for t in tokens)


async def scripted_llm(prompt, system_prompt=None, history_messages=None, **_):
    return EXTRACTION


async def hashed_embedding(texts, **_):
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 16] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def kwargs(working_dir: str, workspace: str) -> dict:
    from lightrag.utils import EmbeddingFunc, Tokenizer

    # LightRAG keeps a store's data per (namespace, workspace) in the process, whatever the working dir
    return dict(working_dir=working_dir, workspace=workspace, llm_model_func=scripted_llm,
                embedding_func=EmbeddingFunc(embedding_dim=16, max_token_size=512, func=hashed_embedding,
                                             model_name="hashed-16"),
                tokenizer=Tokenizer("chars", CharTokenizer()))


async def index(cls, working_dir: str, workspace: str):
    rag = cls(**kwargs(working_dir, workspace))
    await rag.initialize_storages()
    for number, document in enumerate(DOCUMENTS):  # one by one: rows in the order written, in every run
        await rag.ainsert(document, ids=f"doc-{number}")
    return rag


async def main(working_dir: str, with_plugin: bool) -> None:
    prism = None
    if with_plugin:
        from lightrag_prism import LightRAG as PrismRAG

        prism = await index(PrismRAG, working_dir + "-prism", "prism")
    from lightrag import LightRAG

    plain = await index(LightRAG, working_dir, "plain")
    await plain.finalize_storages()
    if prism is not None:
        await prism.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] == "plugin"))
