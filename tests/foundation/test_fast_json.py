"""storages/json_stores.py and nano.py: PrismRAG's JSON stores get the same file, written by orjson, and every value orjson would
write differently goes to LightRAG's own writer."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lightrag.utils
from lightrag_prism.storages import JournaledNanoVectorDB, PrismJsonDocStatusStorage, PrismJsonKVStorage
from lightrag_prism.storages.json_stores import JournaledJsonStore, write_json_fast

STORE = {
    "doc-1": {"status": "processed", "chunks_list": ["chunk-a", "chunk-b"], "content_length": 1234,
              "metadata": {"score": 0.125, "nested": {"empty": {}, "none": None, "flag": True}, "list": []},
              "file_path": "Zoë Ørsted / 東京.txt", "summary": "quote \" backslash \\ tab \t line\nbreak \u2028"},
    "doc-2": {"big": 2 ** 62, "negative": -7, "float": 1e16, "text": ""},
}


def stock_bytes(obj, tmp_path) -> bytes:
    path = tmp_path / "stock.json"
    lightrag.utils.write_json(obj, str(path))
    return path.read_bytes()


def fast_bytes(obj, tmp_path, writer=None) -> bytes:
    path = tmp_path / "fast.json"
    (writer or write_json_fast)(obj, str(path))
    return path.read_bytes()


def test_both_json_stores_flush_through_the_orjson_writer():
    for storage in (PrismJsonKVStorage, PrismJsonDocStatusStorage):
        assert storage.index_done_callback is JournaledJsonStore.index_done_callback


def test_same_bytes_as_lightrags_writer(tmp_path):
    assert fast_bytes(STORE, tmp_path) == stock_bytes(STORE, tmp_path)
    assert json.loads(fast_bytes(STORE, tmp_path)) == STORE


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2 ** 70], ids=["nan", "inf", "bigint"])
def test_values_orjson_writes_differently_go_to_the_original(tmp_path, value):
    obj = {"doc": {"value": value, "other": None}}
    assert fast_bytes(obj, tmp_path) == stock_bytes(obj, tmp_path)
    loaded = json.loads(fast_bytes(obj, tmp_path))["doc"]["value"]
    assert loaded == value or (math.isnan(value) and math.isnan(loaded))


def test_non_string_keys_and_unknown_types_behave_as_lightrags_writer(tmp_path, monkeypatch):
    calls = []

    def original(obj, file_name):
        calls.append(obj)
        return "original"

    monkeypatch.setattr(lightrag.utils, "write_json", original)
    writer = write_json_fast
    assert writer({1: "int key"}, str(tmp_path / "a.json")) == "original"
    from datetime import date

    assert writer({"when": date(2024, 1, 1)}, str(tmp_path / "b.json")) == "original"  # json refuses dates
    assert writer({"fine": [1, 2]}, str(tmp_path / "c.json")) is False  # nothing sanitised
    assert len(calls) == 2 and not (tmp_path / "a.json").exists()


def _nano(path, rows, cls=JournaledNanoVectorDB):
    db = cls(4, storage_file=str(path))
    db.upsert([{"__id__": f"id-{i}", "__vector__": np.arange(4, dtype=np.float32) + i, **row}
               for i, row in enumerate(rows)])
    return db


def test_nano_vectordb_save_reads_back_the_same_and_reloads(tmp_path):
    from nano_vectordb import NanoVectorDB

    rows = [{"content": "Zoë <&> \"quoted\"", "created": 1795596948, "file_path": None, "score": 0.5, "ok": True}]
    fast, stock = _nano(tmp_path / "fast.json", rows), _nano(tmp_path / "stock.json", rows, NanoVectorDB)
    fast.save()
    stock.save()
    assert json.loads((tmp_path / "fast.json").read_text()) == json.loads((tmp_path / "stock.json").read_text())
    reloaded = NanoVectorDB(4, storage_file=str(tmp_path / "fast.json"))
    assert reloaded.get(["id-0"])[0]["content"] == rows[0]["content"]
    np.testing.assert_array_equal(reloaded.query(np.arange(4, dtype=np.float32), top_k=1)[0]["__id__"], "id-0")


@pytest.mark.parametrize("odd", [{"nested": {"a": 1}}, {"nan": float("nan")}], ids=["nested", "nan"])
def test_nano_vectordb_rows_that_are_not_plain_use_the_original_save(tmp_path, odd):
    db = _nano(tmp_path / "db.json", [dict(odd, content="x")])
    db.save()
    assert ", " in (tmp_path / "db.json").read_text()  # json.dump's separators: the original wrote it


@pytest.mark.parametrize("ids", [["id-3", "id-0", "missing", "id-3"], [], ("id-1",), ["id-2"] * 3],
                         ids=["mixed", "empty", "tuple", "repeated"])
def test_nano_vectordb_get_returns_what_the_original_returns(tmp_path, ids):
    from nano_vectordb import NanoVectorDB

    db = _nano(tmp_path / "db.json", [{"content": f"row {i}"} for i in range(5)])
    assert db.get(ids) == NanoVectorDB.get(db, ids)  # same rows, same (storage) order
    assert [row["__id__"] for row in db.get(["id-4", "id-1"])] == ["id-1", "id-4"]
