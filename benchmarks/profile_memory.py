"""Where a query process's memory goes, structure by structure, on an index built by a bench.

    python benchmarks/profile_memory.py --working-dir /tmp/bench/pooled/pooled-9002-text [--workspace pooled]

In a fresh process: open the index as ``lightrag-prism bench`` opens it (PrismRAG, the local embedder, the query
views prepared at start), run one ``prism`` and one ``hipporag`` query, then measure each structure's deep size:
LightRAG's KV dicts, each NanoVectorDB (matrix and metadata), the NetworkX graph, the graph snapshot and each
view derived from it, the plugin's per-instance state (name and fact indexes, lexicon, synonyms) and the caches.
Objects reachable from several structures are counted once, under the first that reaches them (the table's order),
and the bytes a later structure shares are reported beside it: a structure that holds a *copy* of another's data
counts it again, which is what "held twice" means. Resident memory (psutil) before opening, after opening and after
the queries gives the rest (interpreter, libraries, allocator slack).

Writes ``benchmarks/results/memory-<passages>.json`` and prints a Markdown table. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sys
import types
from pathlib import Path

import numpy as np
import psutil
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SKIP_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
              types.CoroutineType, types.FrameType, types.CodeType)
SKIP_NAMES = {"lock", "_lock", "rag", "_rag", "global_config", "embedding_func", "llm_model_func", "tokenizer", "loop",
              "_loop", "executor", "_executor", "logger"}


def deep_size(root, seen: set[int]) -> tuple[int, int]:
    """(bytes first reached from ``root``, bytes of objects ``seen`` already held). numpy arrays count their buffer
    once (a view counts nothing itself); sparse matrices count their arrays."""
    own = shared = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if isinstance(obj, SKIP_TYPES):
            continue
        key = id(obj)
        if key in seen:
            shared += _flat(obj)
            continue
        seen.add(key)
        if isinstance(obj, np.ndarray):
            if obj.base is None:
                own += sys.getsizeof(obj)  # an array that owns its buffer counts it in its size (not nbytes again)
            else:
                stack.append(obj.base)
            continue
        if sp.issparse(obj):
            stack.extend(getattr(obj, name) for name in ("data", "indices", "indptr", "row", "col")
                         if hasattr(obj, name))
            continue
        own += sys.getsizeof(obj, 0)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif isinstance(obj, (str, bytes, int, float, bool, type(None))):
            continue
        else:
            attrs = getattr(obj, "__dict__", None)
            if attrs is not None:
                stack.extend(v for k, v in attrs.items() if k not in SKIP_NAMES)
            for name in getattr(type(obj), "__slots__", ()):
                if name not in SKIP_NAMES and hasattr(obj, name):
                    stack.append(getattr(obj, name))
    return own, shared


def _flat(obj) -> int:
    return obj.nbytes if isinstance(obj, np.ndarray) and obj.base is None else 0


def structures(rag, snapshot) -> list[tuple[str, object]]:
    from lightrag_prism.backends.embedding_cache import embedding_cache_of
    from lightrag_prism.retrievers.views.passage_graph import hippo_state

    kv = [(f"LightRAG KV: {name}" + (" (not read)" if getattr(getattr(rag, name), "unread", False) else ""),
           None if getattr(getattr(rag, name), "unread", False) else getattr(getattr(rag, name), "_data", None))
          for name in ("full_docs", "text_chunks", "full_entities", "full_relations", "entity_chunks",
                       "relation_chunks", "llm_response_cache", "doc_status")]
    vdb = []
    for name in ("entities_vdb", "relationships_vdb", "chunks_vdb"):
        vdb_storage = getattr(rag, name)
        if not getattr(vdb_storage, "client_read", True):  # never read by this process (read on first use)
            vdb += [(f"NanoVectorDB {name}: matrix (not read)", None), (f"NanoVectorDB {name}: metadata", None)]
            continue
        storage = getattr(vdb_storage._client, "_NanoVectorDB__storage")
        vdb += [(f"NanoVectorDB {name}: matrix", storage.get("matrix")),
                (f"NanoVectorDB {name}: metadata", storage.get("data"))]
    graph = [("NetworkX graph", rag.chunk_entity_relation_graph._graph)]
    derived = dict(snapshot.derived)
    core = {k: v for k, v in vars(snapshot).items() if k != "derived"}
    views = [("graph snapshot (CSR, indexes)", core)] + [(f"snapshot view: {k}", v) for k, v in derived.items()]
    plugin = [("plugin state (name/fact indexes, lexicon, synonyms)", hippo_state(rag)),
              ("embedding cache", embedding_cache_of(rag.embedding_func))]
    return kv + vdb + graph + views + plugin


async def measure(args) -> dict:
    from lightrag_prism import PrismQueryParam

    process = psutil.Process()
    before = process.memory_info().rss
    rag = await _open(args)
    opened = process.memory_info().rss
    for mode in ("prism", "hipporag"):
        await rag.aquery_data("Who directed the film that won the award?", PrismQueryParam(mode=mode))
    gc.collect()
    queried = process.memory_info().rss
    snapshot = await rag.graph_snapshot()
    passages = len(rag.text_chunks._data)
    seen: set[int] = set()
    rows = []
    for name, root in structures(rag, snapshot):
        own, shared = deep_size(root, seen) if root is not None else (0, 0)
        rows.append({"structure": name, "bytes": own, "shared_bytes": shared})
    await rag.finalize_storages()
    return {"passages": passages, "rss_start": before, "rss_opened": opened, "rss_queried": queried,
            "structures": rows}


async def _open(args):
    from lightrag_prism.backends import local_embedding_func
    from lightrag_prism.backends.tokenizer import OfflineTokenizer
    from lightrag_prism.rag import PrismRAG

    rag = PrismRAG(working_dir=args.working_dir, workspace=args.workspace, tokenizer=OfflineTokenizer(),
                   embedding_func=local_embedding_func(max_token_size=512), embedding_batch_num=64)
    await rag.initialize_storages()
    return rag


def table(report: dict) -> str:
    n = report["passages"]
    lines = [f"{n} passages; RSS {report['rss_opened'] / 2**20:.0f} MB opened, {report['rss_queried'] / 2**20:.0f} MB "
             f"after two queries ({report['rss_queried'] / n / 1024:.0f} KB per passage)", "",
             "| structure | MB | KB per passage | also reaches (MB, counted above) |", "|---|---|---|---|"]
    for row in sorted(report["structures"], key=lambda r: -r["bytes"]):
        lines.append(f"| {row['structure']} | {row['bytes'] / 2**20:.1f} | {row['bytes'] / n / 1024:.2f} | "
                     f"{row['shared_bytes'] / 2**20:.1f} |")
    total = sum(r["bytes"] for r in report["structures"])
    lines.append(f"| **all structures** | {total / 2**20:.1f} | {total / n / 1024:.2f} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--working-dir", required=True)
    parser.add_argument("--workspace", default="pooled")
    args = parser.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    report = asyncio.run(measure(args))
    print(table(report))
    out = Path(__file__).parent / "results" / f"memory-{report['passages']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
