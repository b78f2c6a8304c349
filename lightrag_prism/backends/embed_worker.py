"""The local embedder's worker process: ``python .../backends/embed_worker.py THREADS PRECISION`` (or ``-m
lightrag_prism.backends.embed_worker``).

It loads all-MiniLM-L6-v2 once, picks its precision, then answers requests on stdin/stdout until stdin closes.
Each message is a 4-byte big-endian length and a pickle: a request ``(texts, batch_size)``, a reply
``("ok", float32 array)`` or ``("error", message)``; the first message is ``("ready", precision)``. Only the parent
process (``local_embedder``) talks to it, over its own pipes.

**Batches.** A request's texts are sorted by their word-piece count and cut into forward passes of at most
``batch_size`` texts and :data:`TOKENS_PER_BATCH` padded word pieces (:func:`length_batches`). sentence-transformers
sorts by characters, which pads a batch of 64 entity texts to 1.6x their word pieces, and a pass of 64 such texts
runs slower per token than one of a few hundred tokens. Measured through this worker on a 2-core AVX2 machine
(fp32, 2 threads, requests of 1,024 texts; entity texts of ~45 word pieces, passages of ~100): 51.9 -> 81-86
entity texts/s, 23.8 -> 29-34 passages/s; the pooled bench's build 65.4 -> 51.4 min (docs/benchmarks.md). The
vectors are the same to 1e-7. In bf16 (AVX512-BF16 machine, 2 threads) passes of 2,048 word pieces ran 10-15%
faster than of 1,024 (512 passages: 60-64 -> 69-74 texts/s; 1,024 entity-like texts: 233-244 -> 259-293), 4,096 no
faster; in fp32 there 2,048 was no faster than 1,024, so fp32 keeps the budget it was tuned with.

**Precision.** On CPUs with bfloat16 units (AMX, AVX512-BF16) running the model under ``torch.autocast`` in bf16
is about 2.6x faster (measured: 326 -> 851 texts/s, 2 threads) with vectors that keep a cosine of at least 0.9999
to fp32 ones, so indexes stay interchangeable. Elsewhere bf16 is emulated and slower. ``auto`` therefore times
both on :data:`CALIBRATION_TEXTS` at start (under a second there) and keeps bf16 only when it is at least
:data:`MIN_SPEEDUP` times faster and agrees with fp32 to :data:`MIN_AGREEMENT`; ``fp32``/``bf16`` force a choice.
Where the CPU's flags say it has no bf16 arithmetic (:func:`native_bf16`) ``auto`` is fp32 without timing: the
emulated bf16 passes took 12.7 s of a worker's start on a 2-core AVX2 EPYC.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from pathlib import Path


def _sibling(name: str):
    """A module of this directory. ``local_embedder`` starts this file as a script, so that the package's
    ``__init__`` (LightRAG and the patches: 2.6 s of a worker's start) is not imported; then by its path."""
    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    spec = importlib.util.spec_from_file_location(f"_prism_worker_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if not __package__ and sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # run as a script: this directory's modules must not shadow top-level ones
_protocol = _sibling("worker_protocol")
read_message, write_message = _protocol.read_message, _protocol.write_message

PRECISIONS = ("auto", "fp32", "bf16")
MIN_SPEEDUP = 1.3
MIN_AGREEMENT = 0.999
CALIBRATION_ROUNDS = 2
TOKENS_PER_BATCH = {"fp32": 1024, "bf16": 2048}  # padded word pieces per forward pass (see Batches above)
CALIBRATION_TEXTS = [
    f"{subject} {verb} {obj} in {year}, according to the {source} of the period."
    for subject in ("Marie Curie", "The Nobel committee", "A small publishing house in Leipzig", "Teutberga")
    for verb in ("moved to", "wrote about", "was founded near", "received a letter from")
    for obj, year, source in (("Paris", 1891, "archives"), ("the university library", 1903, "registers"),
                              ("the river delta and its harbour towns", 1875, "chronicles"),
                              ("Lothair II", 855, "annals"))
]


def length_batches(lengths: list[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` (word pieces per text) in forward passes, longest first: each pass holds at most
    ``max_texts`` texts, and at most ``max_tokens`` word pieces once padded to its longest text (a text longer than
    that alone gets a pass of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        batch = batches[-1] if batches else None
        # sorted longest first, so the batch's first text sets its padded length
        if batch and len(batch) < max_texts and (len(batch) + 1) * lengths[batch[0]] <= max_tokens:
            batch.append(i)
        else:
            batches.append([i])
    return batches


def _encoder(model, bf16: bool):
    """``encode(texts, batch_size) -> (n, 384)`` float32 rows in request order, by ``model``
    (``torch_minilm.TorchMiniLM``) in passes of :func:`length_batches`."""
    import numpy as np
    import torch

    max_tokens = TOKENS_PER_BATCH["bf16" if bf16 else "fp32"]

    def encode(texts, batch_size=64):
        ids = model.token_ids(list(texts))
        vectors = np.empty((len(ids), model.dim), dtype=np.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            for batch in length_batches([len(row) for row in ids], batch_size, max_tokens):
                vectors[batch] = model.forward([ids[i] for i in batch])
        return vectors
    return encode


def native_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether the CPU does bfloat16 arithmetic, from the flags in Linux's ``/proc/cpuinfo`` (x86 ``avx512_bf16``
    or ``amx_bf16``, Arm ``bf16``); None where they cannot be read (another OS)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86, Arm
            return bool(set(value.split()) & {"avx512_bf16", "amx_bf16", "bf16"})
    return None


def pick_precision(model, requested: str) -> str:
    """``requested``, or for ``auto`` the faster of fp32 and bf16 when bf16 agrees with fp32 (see module doc)."""
    import numpy as np

    if requested != "auto":
        return requested
    if native_bf16() is False:
        return "fp32"
    encoders = {name: _encoder(model, name == "bf16") for name in ("fp32", "bf16")}
    timings, vectors = {name: float("inf") for name in encoders}, {}
    for encode in encoders.values():
        encode(CALIBRATION_TEXTS[:8])  # first call pays one-off setup
    # the best of alternating rounds: one timing each picked fp32 in one of six starts where bf16 is 1.6x faster
    for _ in range(CALIBRATION_ROUNDS):
        for name, encode in encoders.items():
            start = time.perf_counter()
            vectors[name] = encode(CALIBRATION_TEXTS)
            timings[name] = min(timings[name], time.perf_counter() - start)
    agreement = float(np.einsum("ij,ij->i", vectors["fp32"], vectors["bf16"]).min())
    faster = timings["bf16"] * MIN_SPEEDUP <= timings["fp32"]
    return "bf16" if faster and agreement >= MIN_AGREEMENT else "fp32"


def main() -> None:
    threads = (int(sys.argv[1]) if len(sys.argv) > 1 else 0) or os.cpu_count() or 1
    requested = sys.argv[2] if len(sys.argv) > 2 else "auto"
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything a library prints must not corrupt the reply stream
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    model = _sibling("torch_minilm").load()
    precision = pick_precision(model, requested)
    encode = _encoder(model, precision == "bf16")
    write_message(replies, ("ready", precision))
    while (request := read_message(requests)) is not None:
        texts, batch_size = request
        try:
            write_message(replies, ("ok", np.asarray(encode(texts, batch_size), dtype=np.float32)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            write_message(replies, ("error", f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # the parent exited (or shut the pool down) first, even while this one was starting
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing left to flush at exit
        sys.exit(0)
