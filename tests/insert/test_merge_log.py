"""The merge log's decisions and journal, on a file document and on the plugin state's KV record."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lightrag_prism import PrismRAG
from lightrag_prism import jsonfile
from lightrag_prism.insert.merging.log import LOG_DOCUMENT, MergeLog, description_hash
from lightrag_prism.insert.merging.union_find import merge_clusters
from lightrag_prism.plugin_state import FileDocument, plugin_state
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.asyncio


def _clock():
    t = iter(range(1000, 10_000))
    return lambda: float(next(t))


def _doc(tmp_path) -> FileDocument:
    return FileDocument(tmp_path / "log.json")


async def test_record_and_was_refused_respects_description_changes(tmp_path):
    log = await MergeLog.open(_doc(tmp_path), clock=_clock())
    ha, hb = description_hash("Apple the fruit"), description_hash("Apple Inc. the company")
    await log.record("Apple", "Apple Inc.", "refuse", 0.4, None, ha, hb)
    assert log.was_refused("Apple", "Apple Inc.", ha, hb)
    assert log.was_refused("Apple Inc.", "Apple", hb, ha)  # order-independent
    assert not log.was_refused("Apple", "Apple Inc.", description_hash("changed"), hb)
    assert not log.was_refused("Apple", "Banana", ha, hb)
    await log.record("Apple", "Apple Inc.", "merge", 0.99, "Apple Inc.", ha, hb)
    assert not log.was_refused("Apple", "Apple Inc.", ha, hb)  # latest decision wins
    assert log.get("Apple Inc.", "Apple").canonical == "Apple Inc."


async def test_decisions_persist_across_instances(tmp_path):
    await (await MergeLog.open(_doc(tmp_path))).record("b", "a", "refuse", 0.1, desc_hash_a="hb", desc_hash_b="ha")
    reopened = await MergeLog.open(_doc(tmp_path))
    (rec,) = reopened.decisions()
    assert (rec.a, rec.b, rec.desc_hashes) == ("a", "b", {"b": "hb", "a": "ha"})
    assert reopened.was_refused("a", "b", "ha", "hb")
    data = json.loads((tmp_path / "log.json").read_text())
    assert data["version"] == 1 and len(data["decisions"]) == 1


async def test_record_validation(tmp_path):
    log = await MergeLog.open(_doc(tmp_path))
    with pytest.raises(ValueError, match=r"\['merge', 'refuse'\]"):
        await log.record("a", "b", "maybe", 0.5)
    with pytest.raises(ValueError, match="two different names"):
        await log.record("a", "a", "merge", 0.5)


async def test_journal_begin_complete_pending(tmp_path):
    (cluster,) = merge_clusters([("Apple", "Apple Inc.", 0.99, "Apple Inc.")])
    log = await MergeLog.open(_doc(tmp_path), clock=_clock())
    entry = await log.begin(cluster)
    assert entry.state == "pending" and entry.members == ["Apple", "Apple Inc."]
    assert await log.begin(cluster) == entry  # idempotent while pending
    assert [e.cluster_id for e in log.pending()] == [cluster.cluster_id]
    done = await log.complete(cluster.cluster_id)
    assert done.state == "done" and done.completed_at is not None
    assert await log.complete(cluster.cluster_id) == done
    assert log.pending() == [] and (await MergeLog.open(_doc(tmp_path))).pending() == []
    with pytest.raises(KeyError, match="begin"):
        await log.complete("nope")
    with pytest.raises(ValueError, match="cluster_id"):
        await log.begin({"members": []})


async def _state_rag(working_dir, workspace: str = "ws") -> PrismRAG:
    # LightRAG's JSON storages share data per workspace across a process: tests in one process use distinct ones
    rag = PrismRAG(working_dir=str(working_dir), workspace=workspace, embedding_func=hash_embedding_func(),
                   tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    return rag


async def test_killed_process_leaves_merge_pending_in_the_kv_store(tmp_path):
    """A real process journals a merge in its KV storage, then dies before complete(): the next one sees it."""
    script = textwrap.dedent(
        f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from lightrag_prism.insert.merging.log import LOG_DOCUMENT, MergeLog
        from lightrag_prism.plugin_state import plugin_state
        from tests.insert.test_merge_log import _state_rag

        async def main():
            rag = await _state_rag({str(tmp_path)!r})
            log = await MergeLog.open(plugin_state(rag).document(LOG_DOCUMENT))
            await log.complete((await log.begin({{"cluster_id": "c-done", "members": ["x", "y"],
                                                  "canonical": "x"}})).cluster_id)
            await log.begin({{"cluster_id": "c1", "members": ["TSMC", "Taiwan Semiconductor"], "canonical": "TSMC"}})
            os._exit(137)  # killed: no complete(), no finalize, no atexit

        asyncio.run(main())
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=ROOT)
    assert result.returncode == 137, result.stderr.decode()[-2000:]
    on_disk = json.loads((tmp_path / "ws" / "kv_store_prism_state.json").read_text())
    journal = json.loads(on_disk[LOG_DOCUMENT]["return"])["journal"]
    assert [(e["cluster_id"], e["state"]) for e in journal] == [("c-done", "done"), ("c1", "pending")]
    rag = await _state_rag(tmp_path)  # initialize_storages rolls the pending merge forward
    try:
        restarted = await MergeLog.open(plugin_state(rag).document(LOG_DOCUMENT))
        assert restarted.pending() == []
        (entry,) = [e for e in restarted.journal() if e.cluster_id == "c1"]
        assert (entry.state, entry.canonical, entry.members) == ("done", "TSMC", ["TSMC", "Taiwan Semiconductor"])
    finally:
        await rag.finalize_storages()


async def test_crash_during_write_keeps_previous_file(tmp_path, monkeypatch):
    log = await MergeLog.open(_doc(tmp_path))
    await log.begin({"cluster_id": "c1", "members": ["a", "b"], "canonical": "a"})
    before = (tmp_path / "log.json").read_bytes()

    def dying_replace(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(jsonfile.os, "replace", dying_replace)
    with pytest.raises(OSError, match="power cut"):
        await log.complete("c1")
    monkeypatch.undo()
    assert (tmp_path / "log.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["log.json"]  # temp file removed
    assert [e.cluster_id for e in (await MergeLog.open(_doc(tmp_path))).pending()] == ["c1"]


async def test_corrupt_log_raises_instead_of_dropping_journal(tmp_path):
    rag = await _state_rag(tmp_path, "corrupt")
    try:
        store = plugin_state(rag).documents_store
        await store.upsert({LOG_DOCUMENT: {"return": "{not json", "original_prompt": "", "cache_type": "x"}})
        with pytest.raises(ValueError, match="not valid JSON"):
            await MergeLog.open(plugin_state(rag).document(LOG_DOCUMENT))
        await plugin_state(rag).document(LOG_DOCUMENT).save({"version": 99})
        with pytest.raises(ValueError, match="version"):
            await MergeLog.open(plugin_state(rag).document(LOG_DOCUMENT))
    finally:
        await rag.finalize_storages()
