"""LightRAG's JSON stores written by orjson: the same bytes, about 20 times faster.

``JsonKVStorage`` and ``JsonDocStatusStorage`` persist by rewriting their whole file with
``lightrag.utils.write_json`` (``json.dump(..., indent=2, ensure_ascii=False)``). ``indent`` switches the standard
library to its pure-Python encoder: on a 1,000-passage index one write of the doc-status store took 13 ms and an
insert spent most of its flush time there. ``orjson.dumps(..., option=OPT_INDENT_2)`` writes the same text (byte for
byte on every store of such an index; a float written in exponent notation may differ in its exponent's digits,
``1.5e-07`` against ``1.5e-7``, the same value) in a twentieth of the time (``tests/foundation/test_fast_json.py``).

Private coupling: the two modules import ``write_json`` by name, so the name is replaced in each module
(``json_kv_impl.write_json``, ``json_doc_status_impl.write_json``), once, at import. The replacement keeps
``write_json``'s contract (atomic write through ``lightrag.file_atomic.atomic_write``; returns whether the data
was sanitised) and hands every value orjson would write differently to the original:

* orjson cannot encode it (non-string keys, integers beyond 64 bits, invalid surrogates, numpy arrays, ...), or it
  is a dataclass or date, which ``json`` refuses: ``TypeError``/``JSONEncodeError`` -> the original;
* NaN and infinities, which orjson writes as ``null``: the output contains ``null`` and no longer decodes to the
  same value -> the original.

``NanoVectorDBStorage`` persists through ``nano_vectordb.NanoVectorDB.save``, a ``json.dump`` of every row and
the base64 matrix (``json.dump`` to a file always takes the pure-Python encoder: 0.42 s per save of a 27,000-row
store). :func:`nano_vectordb_save` writes the same object with ``orjson.dumps`` (0.04 s): the same JSON value,
without the spaces after ``,`` and ``:``, which ``json.load`` ignores. Rows whose values are not all strings,
integers, booleans, ``None`` or finite floats (what LightRAG stores) go to the original ``save``.

``NanoVectorDB.get(ids)`` (what ``NanoVectorDBStorage.get_vectors_by_ids`` and ``get_by_ids`` call) tests each
row's id for membership in the list ``ids``: rows x ids comparisons. :func:`nano_vectordb_get` returns the same
rows in the same order from one pass with a set (reading 3,000 ids from a 30,000-row store: seconds -> ms).

All apply to every LightRAG instance of the process: what lands on disk reads back identically, only faster.
"""

from __future__ import annotations

import math

from .private import register_symbols, wrap_once

_MODULES = ("lightrag.kg.json_kv_impl", "lightrag.kg.json_doc_status_impl")
_SYMBOLS = [(module, "write_json", 2) for module in _MODULES]
# nano-vectordb's private storage dict; a version without it gets its own save (checked on every call).
_NANO_STORAGE = "_NanoVectorDB__storage"
register_symbols(*_SYMBOLS)


def orjson_writer(original):
    """``write_json(obj, file_name)`` by orjson when it writes exactly what ``original`` would, else ``original``."""
    import orjson
    from lightrag.file_atomic import atomic_write

    options = orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME

    def write_json(json_obj, file_name):
        try:
            data = orjson.dumps(json_obj, option=options)
        except (TypeError, orjson.JSONEncodeError):
            return original(json_obj, file_name)
        if b"null" in data and orjson.loads(data) != json_obj:  # NaN/inf became null
            return original(json_obj, file_name)

        def write(tmp_path: str) -> None:
            with open(tmp_path, "wb") as handle:
                handle.write(data)

        atomic_write(file_name, write)
        return False  # nothing was sanitised: the caller need not reload

    return write_json


_PLAIN = (str, int, bool, type(None))


def _plain_rows(rows) -> bool:
    """True when every row is a dict of strings, integers, booleans, None or finite floats (orjson and json then
    write the same values)."""
    for row in rows:
        if type(row) is not dict:
            return False
        for value in row.values():
            if not isinstance(value, _PLAIN) and not (type(value) is float and math.isfinite(value)):
                return False
    return True


def nano_vectordb_save(original):
    """``NanoVectorDB.save`` through orjson when the rows are plain (see the module doc), else ``original``."""
    import orjson
    from nano_vectordb.dbs import array_to_buffer_string

    def save(self):
        storage = getattr(self, _NANO_STORAGE, None)
        if not isinstance(storage, dict) or not _plain_rows(storage.get("data", ())):
            return original(self)
        try:
            data = orjson.dumps({**storage, "matrix": array_to_buffer_string(storage["matrix"])})
        except (TypeError, orjson.JSONEncodeError):
            return original(self)
        with open(self.storage_file, "wb") as handle:
            handle.write(data)

    return save


def nano_vectordb_get(original):
    """``NanoVectorDB.get`` with the ids in a set (see the module doc); ``original`` for unhashable ids."""
    from nano_vectordb.dbs import f_ID

    def get(self, ids):
        storage = getattr(self, _NANO_STORAGE, None)
        try:
            wanted = set(ids)
        except TypeError:
            return original(self, ids)
        if not isinstance(storage, dict):
            return original(self, ids)
        return [data for data in storage["data"] if data[f_ID] in wanted]

    return get


def install() -> None:
    import importlib

    from nano_vectordb import NanoVectorDB

    for module in _MODULES:
        wrap_once(importlib.import_module(module), "write_json", orjson_writer)
    wrap_once(NanoVectorDB, "save", nano_vectordb_save)
    wrap_once(NanoVectorDB, "get", nano_vectordb_get)


install()
