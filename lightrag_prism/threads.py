"""BLAS thread pools sized for a query, set by the library rather than the user's environment.

A question is one short text: its embedding (MiniLM in numpy) and the retrieval's dense products are small
matrices, where OpenBLAS's worker threads cost more than they give. With its default of one thread per core, a
query that shares the machine with other work waits for threads that another process holds, and OpenBLAS's workers
spin after each call: on a 2-core machine with one core kept busy, `prism`'s p95 was 149-165 ms by default against
31 ms with one BLAS thread (issue 68; ``benchmarks/bench_load.py`` measures it in one run).

So while any query runs, BLAS uses :data:`QUERY_BLAS_THREADS` thread(s), and the pools get their sizes back when the
last overlapping query ends (queries overlap on the event loop). The limit is set from the thread that runs the
queries, the event loop's, and is the process's: the retrievers' own threads (FastRP, ``asyncio.to_thread``) see it.
Inserts keep the machine's threads: their embeddings run in worker processes with threads of their own, and their
kNN products between queries.
"""

from __future__ import annotations

import contextlib
import functools
import threading

QUERY_BLAS_THREADS = 1


class BlasLimit:
    """Reference-counted BLAS thread limit: the first holder sets it, the last one restores the pools' sizes.
    ``threads=None`` turns it off (benchmarks measure the library defaults with it)."""

    def __init__(self, threads: int | None = QUERY_BLAS_THREADS):
        self.threads = threads
        self._lock = threading.Lock()
        self._holders = 0
        self._controller = None
        self._limited = None  # threadpoolctl's limiter while held; None when nothing was limited

    @contextlib.contextmanager
    def held(self):
        self._enter()
        try:
            yield
        finally:
            self._exit()

    def _enter(self) -> None:
        with self._lock:
            self._holders += 1
            if self._holders == 1 and self.threads is not None:
                if self._controller is None:  # finds the BLAS libraries loaded (numpy's, scipy's): once
                    from threadpoolctl import ThreadpoolController

                    self._controller = ThreadpoolController()
                self._limited = self._controller.limit(limits=self.threads, user_api="blas")

    def _exit(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._limited is not None:
                self._limited.restore_original_limits()
                self._limited = None


QUERY_BLAS = BlasLimit()


def query_threads(method):
    """An async query method that runs with :data:`QUERY_BLAS` held."""

    @functools.wraps(method)
    async def limited(*args, **kwargs):
        with QUERY_BLAS.held():
            return await method(*args, **kwargs)

    return limited
