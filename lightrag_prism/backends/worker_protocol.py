"""Length-prefixed pickle messages between the local embedder and its worker process (``embed_worker``)."""

from __future__ import annotations

import pickle
import struct


def read_message(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    return pickle.loads(stream.read(length))


def write_message(stream, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()
