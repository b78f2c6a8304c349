import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lightrag_prism.insert import merge_log as merge_log_module
from lightrag_prism.insert.merge_log import LOG_FILENAME, MergeLog, description_hash
from lightrag_prism.insert.union_find import merge_clusters

ROOT = Path(__file__).resolve().parents[2]


def _clock():
    t = iter(range(1000, 10_000))
    return lambda: float(next(t))


def test_record_and_was_refused_respects_description_changes(tmp_path):
    log = MergeLog(tmp_path, clock=_clock())
    ha, hb = description_hash("Apple the fruit"), description_hash("Apple Inc. the company")
    log.record("Apple", "Apple Inc.", "refuse", 0.4, None, ha, hb)
    assert log.was_refused("Apple", "Apple Inc.", ha, hb)
    assert log.was_refused("Apple Inc.", "Apple", hb, ha)  # order-independent
    assert not log.was_refused("Apple", "Apple Inc.", description_hash("changed"), hb)
    assert not log.was_refused("Apple", "Banana", ha, hb)
    log.record("Apple", "Apple Inc.", "merge", 0.99, "Apple Inc.", ha, hb)
    assert not log.was_refused("Apple", "Apple Inc.", ha, hb)  # latest decision wins
    assert log.get("Apple Inc.", "Apple").canonical == "Apple Inc."


def test_decisions_persist_across_instances(tmp_path):
    MergeLog(tmp_path).record("b", "a", "refuse", 0.1, desc_hash_a="hb", desc_hash_b="ha")
    reopened = MergeLog(tmp_path)
    (rec,) = reopened.decisions()
    assert (rec.a, rec.b, rec.desc_hashes) == ("a", "b", {"b": "hb", "a": "ha"})
    assert reopened.was_refused("a", "b", "ha", "hb")
    data = json.loads((tmp_path / LOG_FILENAME).read_text())
    assert data["version"] == 1 and len(data["decisions"]) == 1


def test_record_validation(tmp_path):
    log = MergeLog(tmp_path)
    with pytest.raises(ValueError, match=r"\['merge', 'refuse'\]"):
        log.record("a", "b", "maybe", 0.5)
    with pytest.raises(ValueError, match="two different names"):
        log.record("a", "a", "merge", 0.5)


def test_journal_begin_complete_pending(tmp_path):
    (cluster,) = merge_clusters([("Apple", "Apple Inc.", 0.99, "Apple Inc.")])
    log = MergeLog(tmp_path, clock=_clock())
    entry = log.begin(cluster)
    assert entry.state == "pending" and entry.members == ["Apple", "Apple Inc."]
    assert log.begin(cluster) == entry  # idempotent while pending
    assert [e.cluster_id for e in log.pending()] == [cluster.cluster_id]
    done = log.complete(cluster.cluster_id)
    assert done.state == "done" and done.completed_at is not None
    assert log.complete(cluster.cluster_id) == done
    assert log.pending() == [] and MergeLog(tmp_path).pending() == []
    with pytest.raises(KeyError, match="begin"):
        log.complete("nope")
    with pytest.raises(ValueError, match="cluster_id"):
        log.begin({"members": []})


def test_simulated_crash_leaves_merge_pending(tmp_path):
    """A real process writes the journal entry, then dies before complete()."""
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from lightrag_prism.insert.merge_log import MergeLog
        log = MergeLog({str(tmp_path)!r})
        log.complete(log.begin({{"cluster_id": "c-done", "members": ["x", "y"], "canonical": "x"}}).cluster_id)
        log.begin({{"cluster_id": "c1", "members": ["TSMC", "Taiwan Semiconductor"], "canonical": "TSMC"}})
        # ... graph operations would run here ...
        os._exit(137)  # killed: no complete(), no cleanup, no atexit
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert result.returncode == 137, result.stderr.decode()
    restarted = MergeLog(tmp_path)
    (pending,) = restarted.pending()
    assert (pending.cluster_id, pending.canonical) == ("c1", "TSMC")
    assert pending.members == ["TSMC", "Taiwan Semiconductor"]
    restarted.complete("c1")  # rolled forward by the caller
    assert MergeLog(tmp_path).pending() == []


def test_crash_during_write_keeps_previous_file(tmp_path, monkeypatch):
    log = MergeLog(tmp_path)
    log.begin({"cluster_id": "c1", "members": ["a", "b"], "canonical": "a"})
    before = (tmp_path / LOG_FILENAME).read_bytes()

    def dying_replace(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(merge_log_module.os, "replace", dying_replace)
    with pytest.raises(OSError, match="power cut"):
        log.complete("c1")
    monkeypatch.undo()
    assert (tmp_path / LOG_FILENAME).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [LOG_FILENAME]  # temp file removed
    assert [e.cluster_id for e in MergeLog(tmp_path).pending()] == ["c1"]


def test_corrupt_file_raises_instead_of_dropping_journal(tmp_path):
    (tmp_path / LOG_FILENAME).write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        MergeLog(tmp_path)
    (tmp_path / LOG_FILENAME).write_text('{"version": 99}')
    with pytest.raises(ValueError, match="version"):
        MergeLog(tmp_path)


def test_missing_directory_is_created_on_first_write(tmp_path):
    target = tmp_path / "nested" / "dir"
    log = MergeLog(target)
    assert log.decisions() == [] and not target.exists()
    log.record("a", "b", "merge", 1.0, "a")
    assert (target / LOG_FILENAME).exists() and os.listdir(target) == [LOG_FILENAME]
