"""The vector cache's file on the file storages (``vector_log.py``): what is written reads back, across
objects and processes, through compactions, a record cut short and a conversion from the older JSON store."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from lightrag_prism import vector_log
from lightrag_prism.vector_log import FileVectors, VectorLog, VectorLogError, log_key


def _vectors(count: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def _keys(count: int, index: str = "names") -> list[bytes]:
    return [log_key(index, f"id {i}") for i in range(count)]


def test_what_is_written_reads_back_in_this_object_and_a_new_one(tmp_path):
    path = str(tmp_path / "v.bin")
    log, keys, vectors = VectorLog(path), _keys(5), _vectors(5)
    assert log.read(keys) == {} and len(log) == 0  # no file yet
    log.write(dict(zip(keys, vectors)))
    log.write({keys[1]: vectors[4]}, [keys[2], log_key("names", "never written")])  # latest wins; a delete
    expected = {keys[0]: vectors[0], keys[1]: vectors[4], keys[3]: vectors[3], keys[4]: vectors[4]}
    for reader in (log, VectorLog(path)):
        got = reader.read(keys)
        assert got.keys() == expected.keys() and len(reader) == 4
        for key, vector in expected.items():
            np.testing.assert_array_equal(got[key], vector)
    assert log_key("names", "a") != log_key("facts", "a")  # one file for both indexes


def test_another_process_appends_and_compacts_and_this_one_follows(tmp_path):
    path = str(tmp_path / "v.bin")
    mine, keys, vectors = VectorLog(path), _keys(40), _vectors(40)
    mine.write(dict(zip(keys[:10], vectors[:10])))
    assert len(mine.read(keys[:10])) == 10
    other = textwrap.dedent(f"""
        import numpy as np
        from lightrag_prism import vector_log
        vector_log.COMPACT_MIN_RECORDS = 8
        log = vector_log.VectorLog({path!r})
        vectors = np.random.default_rng(0).standard_normal((40, 8)).astype(np.float32)
        keys = [vector_log.log_key("names", f"id {{i}}") for i in range(40)]
        log.write(dict(zip(keys[10:40], vectors[10:40])))  # appended by another process
        for _ in range(3):
            log.write({{}}, keys[30:40])
            log.write(dict(zip(keys[30:40], vectors[30:40])))
        print(log.rewrites)
    """)
    done = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, check=True)
    assert int(done.stdout) >= 1  # it compacted: the file this process read was replaced
    got = mine.read(keys)  # misses: this object reads what was appended, from the new file
    assert len(got) == 40 and len(mine) == 40
    for key, vector in zip(keys, vectors):
        np.testing.assert_array_equal(got[key], vector)
    records = (os.path.getsize(path) - vector_log.HEADER_SIZE) // vector_log.record_dtype(8).itemsize
    assert records < 10 + 30 + 3 * 20  # dead records were dropped


def test_writers_in_two_processes_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "v.bin")
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        from lightrag_prism import vector_log
        vector_log.COMPACT_MIN_RECORDS = 16
        log, who = vector_log.VectorLog({path!r}), sys.argv[1]
        for round in range(30):
            keys = [vector_log.log_key(who, f"{{round}} {{i}}") for i in range(4)]
            log.write({{key: np.full(8, round, np.float32) for key in keys}})
            if round % 3 == 2:  # dead records, so compactions happen while the other appends
                log.write({{}}, keys[:2])
    """)
    writers = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    log = VectorLog(path)
    for who in ("a", "b"):
        for round in range(30):
            keys = [log_key(who, f"{round} {i}") for i in range(4)]
            got = log.read(keys)
            kept = keys[2:] if round % 3 == 2 else keys
            assert set(got) == set(kept), (who, round)
            assert all((vector == round).all() for vector in got.values())


def test_a_record_cut_short_is_never_read_and_the_next_writer_cuts_it_off(tmp_path):
    path = str(tmp_path / "v.bin")
    log, keys, vectors = VectorLog(path), _keys(3), _vectors(3)
    log.write({keys[0]: vectors[0]})
    whole = os.path.getsize(path)
    with open(path, "ab") as handle:  # a crash in the middle of an append
        handle.write(keys[1] + b"\x01\x00\x00\x00" + bytes(20))
    fresh = VectorLog(path)
    assert fresh.read(keys[:2]).keys() == {keys[0]}
    fresh.write({keys[2]: vectors[2]})
    assert os.path.getsize(path) == whole + vector_log.record_dtype(8).itemsize
    got = VectorLog(path).read(keys)
    assert got.keys() == {keys[0], keys[2]}
    np.testing.assert_array_equal(got[keys[2]], vectors[2])


def test_another_dimension_or_another_file_is_a_clear_error(tmp_path):
    path = str(tmp_path / "v.bin")
    log = VectorLog(path)
    log.write({log_key("names", "a"): np.ones(8, np.float32)})
    with pytest.raises(VectorLogError, match="dimension 8, not 16: the embedding model changed"):
        log.write({log_key("names", "b"): np.ones(16, np.float32)})
    (tmp_path / "other.bin").write_bytes(b"{}" * 40)
    with pytest.raises(VectorLogError, match="is not a lightrag_prism vector cache"):
        VectorLog(str(tmp_path / "other.bin")).read([log_key("names", "a")])


def test_drop_removes_every_vector(tmp_path):
    path = str(tmp_path / "v.bin")
    log, other = VectorLog(path), VectorLog(path)
    log.write(dict(zip(_keys(3), _vectors(3))))
    assert len(other.read(_keys(3))) == 3
    log.drop()
    assert other.read(_keys(3)) == {} and len(other) == 0 and not os.path.exists(path)
    log.write({_keys(1)[0]: _vectors(1)[0]})  # created again
    assert len(other.read(_keys(3))) == 1


@pytest.mark.asyncio
async def test_file_vectors_show_what_waits_for_the_flush_and_keep_a_failed_flush(tmp_path, monkeypatch):
    cache = FileVectors(str(tmp_path / "v.bin"))
    a, b = _vectors(2)
    await cache.write("names", {"x": a, "y": b})
    await cache.flush()
    await cache.write("names", {"z": a}, dropped=["x"])  # not flushed: still visible as written
    got = await cache.read("names", ["x", "y", "z"])
    assert set(got) == {"y", "z"}
    assert await cache.read("facts", ["y"]) == {}  # another index
    calls = []

    def failing(puts, deletes):
        calls.append((puts, deletes))
        raise OSError("disk full")

    monkeypatch.setattr(cache.log, "write", failing)
    with pytest.raises(OSError):
        await cache.flush()
    assert set(await cache.read("names", ["x", "y", "z"])) == {"y", "z"}  # kept for the next flush
    monkeypatch.undo()
    await cache.flush()
    assert set(await FileVectors(cache.log.path).read("names", ["x", "y", "z"])) == {"y", "z"}


@pytest.mark.asyncio
async def test_concurrent_flushes_write_in_the_order_they_took_their_writes(tmp_path):
    cache = FileVectors(str(tmp_path / "v.bin"))
    vectors = _vectors(50)
    flushes = []
    for i in range(50):
        await cache.write("names", {"same": vectors[i]}, dropped=["gone"] if i % 2 else [])
        if i % 2 == 0:
            await cache.write("names", {"gone": vectors[i]})
        flushes.append(asyncio.ensure_future(cache.flush()))
    await asyncio.gather(*flushes)
    got = await FileVectors(cache.log.path).read("names", ["same", "gone"])
    assert set(got) == {"same"}  # the last write of "gone" was its deletion
    np.testing.assert_array_equal(got["same"], vectors[49])


@pytest.mark.asyncio
async def test_the_older_json_store_is_converted_once_and_removed(tmp_path):
    from lightrag_prism import journal
    from lightrag_prism.plugin_state import _record, encode_vector, vector_key

    json_path = str(tmp_path / "kv_store_prism_vectors.json")
    vectors = _vectors(4)
    records = {vector_key("names", f"n{i}"): _record(f"n{i}", encode_vector(vectors[i]), "prism_vector")
               for i in range(3)}
    records["junk"] = {"return": 5}
    with open(json_path, "w") as handle:
        json.dump(records, handle)
    journal.append_record(json_path, {"u": {vector_key("facts", "f"): _record("f", encode_vector(vectors[3]),
                                                                             "prism_vector")},
                                      "d": [vector_key("names", "n2")]})  # what a later flush appended
    cache = FileVectors(str(tmp_path / "prism_vectors.bin"))
    assert await cache.adopt_json_cache(json_path) == 3
    assert not os.path.exists(json_path) and not os.path.exists(journal.journal_path(json_path))
    got = await FileVectors(cache.log.path).read("names", ["n0", "n1", "n2"])
    assert set(got) == {"n0", "n1"}
    np.testing.assert_array_equal(got["n1"], vectors[1])
    np.testing.assert_array_equal((await cache.read("facts", ["f"]))["f"], vectors[3])
    assert await cache.adopt_json_cache(json_path) == 0  # nothing left to convert
    assert base64.b64decode(encode_vector(vectors[0])) == vectors[0].tobytes()


@pytest.mark.asyncio
async def test_an_index_with_the_older_json_store_opens_without_embedding_its_vectors_again(tmp_path):
    from lightrag_prism import PrismQueryParam
    from lightrag_prism.plugin_state import _record, encode_vector, plugin_state, vector_key
    from lightrag_prism.retrievers.views.passage_graph import hippo_state
    from tests.helpers import opened_offline_rag

    rag = await opened_offline_rag(tmp_path)
    try:
        await rag.ainsert(["Marie Curie was born in Warsaw. She won the Nobel Prize in Physics.",
                           "Pierre Curie worked in Paris with Marie Curie."])
        await rag.aquery_data("Where was Marie Curie born?", PrismQueryParam(mode="hipporag"))
        state, cache = hippo_state(rag), plugin_state(rag).vectors
        held = {index.name: await cache.get(index.name, index.ids) for index in (state.name_index, state.fact_index)}
    finally:
        await rag.finalize_storages()
    assert all(held.values()) and all(len(v) == len(i.ids) for v, i in zip(held.values(), (state.name_index,
                                                                                          state.fact_index)))
    folder = tmp_path / rag.workspace
    os.remove(folder / "prism_vectors.bin")  # as an older version left it: the vectors in a JSON KV store
    (folder / "kv_store_prism_vectors.json").write_text(json.dumps(
        {vector_key(name, vid): _record(vid, encode_vector(vector), "prism_vector")
         for name, vectors in held.items() for vid, vector in vectors.items()}))
    rag = await opened_offline_rag(tmp_path)
    try:
        await rag.aquery_data("Where did Pierre Curie work?", PrismQueryParam(mode="hipporag"))
        state = hippo_state(rag)
        assert state.name_index.embedded_total == state.fact_index.embedded_total == 0
        assert state.name_index.loaded_total + state.fact_index.loaded_total == sum(map(len, held.values()))
        assert not (folder / "kv_store_prism_vectors.json").exists() and (folder / "prism_vectors.bin").exists()
    finally:
        await rag.finalize_storages()


def test_the_key_index_answers_as_a_dict_would_through_merges():
    """``KeyRows`` (sorted arrays and a dict of recent changes) against a plain dict, through random batches small
    (kept in the dict) and large (merged into the arrays), repeated keys and deletions."""
    from lightrag_prism.vector_log import KEY, KeyRows

    rng = np.random.default_rng(7)
    universe = [os.urandom(16) for _ in range(3000)]
    index, model = KeyRows(), {}
    index.MERGE_MIN = 64  # merges happen often at this size
    for step in range(300):
        size = int(rng.choice([1, 5, 40, 400]))
        picks = rng.integers(0, len(universe), size)
        keys = np.array([universe[i] for i in picks], dtype=KEY)
        rows = np.where(rng.random(size) < 0.25, -1, rng.integers(0, 10**9, size))
        index.set_many(keys, rows)
        for key, row in zip(keys.tolist(), rows.tolist()):
            if row < 0:
                model.pop(key, None)
            else:
                model[key] = row
        probe = [universe[i] for i in rng.integers(0, len(universe), 50)]
        assert index.get_many(probe).tolist() == [model.get(key, -1) for key in probe], step
    assert len(index) == len(model)
    keys, rows = index.by_row()
    assert dict(zip(keys.tolist(), rows.tolist())) == model and list(rows) == sorted(rows)
