"""Child process of test_crash_restart.py: insert the first N 2Wiki passages offline into a working dir.

    python -m tests.insert.crash_insert_worker WORKING_DIR N

Prints "ready" once the storages are open, then "done" after ``ainsert`` and ``finalize_storages``. The parent
kills it (SIGKILL) at random points and runs it again on the same directory.
"""

import asyncio
import sys

from lightrag_prism import PrismRAG
from lightrag_prism.eval.datasets import load_2wiki_corpus
from tests.helpers import hash_embedding_func

WORKSPACE = "crash"


def documents(n: int) -> tuple[list[str], list[str]]:
    passages = load_2wiki_corpus()[:n]
    return [p.content for p in passages], [f"doc-{i:04d}" for i in range(n)]


async def main(working_dir: str, n: int) -> None:
    rag = PrismRAG(working_dir=working_dir, workspace=WORKSPACE, embedding_func=hash_embedding_func())
    await rag.initialize_storages()
    print("ready", flush=True)
    texts, ids = documents(n)
    await rag.ainsert(texts, ids=ids)
    await rag.finalize_storages()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
