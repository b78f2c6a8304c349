"""While a query runs, BLAS uses one thread; the pools get their sizes back when the last overlapping query ends."""

import asyncio
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.threads import QUERY_BLAS, BlasLimit
from tests.retrievers._kg import hash_embedding_func, make_rag


def blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads():
    """Two threads per BLAS pool to start from, whatever the machine's default; restored after."""
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.fail(f"this numpy's BLAS cannot be set to 2 threads: {threadpool_info()}")
        yield


def test_the_limit_is_held_by_overlapping_holders_and_restored_by_the_last(two_blas_threads):
    limit = BlasLimit(1)
    first, second = limit.held(), limit.held()
    first.__enter__()
    assert blas_threads() == {1}
    second.__enter__()
    first.__exit__(None, None, None)
    assert blas_threads() == {1}  # the second holder still runs
    second.__exit__(None, None, None)
    assert blas_threads() == {2}
    with BlasLimit(None).held():  # off: the pools keep their sizes
        assert blas_threads() == {2}


def test_the_retrievers_threads_see_the_limit_the_query_set(two_blas_threads):
    """A query holds the limit on the event loop's thread; FastRP and ``asyncio.to_thread`` work run in other
    threads, and OpenBLAS's thread count is the process's: they see one thread too."""
    limit, seen = BlasLimit(1), []
    with limit.held():
        worker = threading.Thread(target=lambda: seen.append(blas_threads()))
        worker.start()
        worker.join()
    assert seen == [{1}] and blas_threads() == {2}


@pytest.mark.asyncio
async def test_a_query_embeds_and_ranks_on_one_blas_thread_and_gives_the_threads_back(tmp_path, two_blas_threads):
    during = []
    embed = hash_embedding_func()
    inner = embed.func

    async def recording(texts, **kwargs):
        during.append(blas_threads())
        await asyncio.sleep(0.01)  # the other query runs meanwhile
        return await inner(texts, **kwargs)

    embed.func = recording
    rag = await make_rag(tmp_path, embedding_func=embed)
    try:
        during.clear()
        await asyncio.gather(*(rag.aquery_data(q, QueryParam(mode=m, chunk_top_k=3))
                               for q, m in (("Where was Alice Vance born?", "prism"),
                                            ("What flows through Townsville?", "naive"))))
        assert during and all(threads == {1} for threads in during), during
        assert blas_threads() == {2} and QUERY_BLAS._holders == 0
        # an error inside the query gives the threads back too
        with pytest.raises(ValueError):
            await rag.aquery_data("Where was Alice Vance born?", QueryParam(mode="no-such-mode"))
        assert blas_threads() == {2}
    finally:
        await rag.finalize_storages()
    assert isinstance(rag, PrismRAG) and np.__name__ == "numpy"
