"""Which attributes of LightRAG and nano-vectordb a step replaces: run as a script, prints JSON.

``python tests/foundation/replaced_symbols.py <working dir>`` imports LightRAG's modules, notes every module attribute
and every attribute of every class they define, then imports lightrag_prism and notes what changed
(``at_import``), then builds a file-backed PrismRAG and initializes its storages (``after_prism_rag``). A fresh
process: nothing else may have imported the plugin first.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys

WATCHED = ("lightrag", "nano_vectordb")
STOCK_MODULES = ("lightrag", "lightrag.lightrag", "lightrag.operate", "lightrag.utils", "lightrag.base",
                 "lightrag.kg.factory", "lightrag.kg.shared_storage", "lightrag.kg.json_kv_impl",
                 "lightrag.kg.json_doc_status_impl", "lightrag.kg.nano_vector_db_impl", "lightrag.kg.networkx_impl",
                 "lightrag.kg.postgres_impl", "nano_vectordb", "nano_vectordb.dbs")


def _watched(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in WATCHED)


def _code(value) -> bool:
    """Functions, classes and method descriptors: what a patch replaces (not the state LightRAG's modules keep,
    such as the shared-storage dicts its initialization sets)."""
    return inspect.isroutine(value) or isinstance(value, (type, staticmethod, classmethod, property))


def attributes() -> dict[str, object]:
    """``module:attribute`` and ``module:Class.attribute`` -> the object, for every code attribute of every watched
    module loaded now (the objects themselves are kept, so an identity test cannot be fooled by a reused id)."""
    out: dict[str, object] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not _watched(name):
            continue
        for attr, value in list(vars(module).items()):
            if _code(value):
                out[f"{name}:{attr}"] = value
            if isinstance(value, type) and value.__module__ == name:
                for member, member_value in list(vars(value).items()):
                    if _code(member_value):
                        out[f"{name}:{attr}.{member}"] = member_value
    return out


def replaced(before: dict[str, object]) -> list[str]:
    now = attributes()
    return sorted(key for key, value in before.items() if key in now and now[key] is not value)


async def build_prism_rag(working_dir: str) -> None:
    import numpy as np
    from lightrag.utils import EmbeddingFunc

    from lightrag_prism import LightRAG

    async def embed(texts, **_):
        return np.ones((len(texts), 8), dtype=np.float32)

    rag = LightRAG(working_dir=working_dir, embedding_func=EmbeddingFunc(embedding_dim=8, max_token_size=512,
                                                                       func=embed, model_name="ones-8"))
    await rag.initialize_storages()
    await rag.finalize_storages()


def main(working_dir: str) -> None:
    for name in STOCK_MODULES:
        importlib.import_module(name)
    before = attributes()
    import lightrag_prism  # noqa: F401

    at_import = replaced(before)
    asyncio.run(build_prism_rag(working_dir))
    after = replaced(before)
    from lightrag_prism.patches import PRIVATE_SYMBOLS

    registry = sorted({f"{module}:{path}" for module, path, _ in PRIVATE_SYMBOLS})
    print(json.dumps({"at_import": at_import, "after_prism_rag": after, "registry": registry}))


if __name__ == "__main__":
    main(sys.argv[1])
