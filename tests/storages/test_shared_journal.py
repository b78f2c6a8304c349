"""LightRAG's multi-process mode (``serve --workers N``): a process follows another's writes to the graph and the
vector stores by applying what it appended to their journals, not by reading the files whole (7 s for the GraphML
of the 9,000-passage bench index, on the event loop, after every upload to the other worker); the JSON stores,
one dict shared through LightRAG's manager, are appended to, not copied and rewritten whole. Real processes:
``tests/storages/shared_journal_worker.py`` forks a writer from a parent holding LightRAG's shared data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lightrag_prism import journal
from tests.storages.shared_journal_worker import ROUNDS

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_follows_another_workers_writes_through_the_journals(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tests.storages.shared_journal_worker", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["writer_exit"] == 0
    assert report["journaled"] == [True, True, True]
    # after every round the reader sees what the writer holds, and its snapshot patched from the names it caught up
    # equals a whole read
    assert all(r["equal"] and r["snapshot_equal"] for r in report["rounds"]), report["rounds"]
    assert report["rounds"][-1]["nodes"] > 0
    # The first round's flush writes the new files whole: read whole. Every later round: caught up, the snapshot
    # patched.
    assert [r["catch_ups"] for r in report["rounds"]] == [[i, i] for i in range(ROUNDS)]
    assert [r["patches"] for r in report["rounds"]] == list(range(ROUNDS))
    # After the writer compacted (new base files), the reader reads them whole once, and again sees what it holds.
    assert report["after_compaction"] and report["compacted_snapshot_equal"]
    # The graph was read when the reader started, before the first round: whole again after it and after the
    # compaction. The vector store is read on first use, after the first round's files were written: only after the
    # compaction.
    assert report["states"] == {"graph_chunk_entity_relation.graphml": {"catch_ups": ROUNDS - 1, "reloads": 2},
                                "vdb_entities.json": {"catch_ups": ROUNDS - 1, "reloads": 1}}
    # A JSON store (one dict in LightRAG's manager): each flush appended what its process wrote (the writer's
    # first flush created the file), never copying the dict; the file always read back as the shared dict, after
    # the other process's compaction too, and a compaction by the reader wrote it whole.
    assert [r["chunks_flushes"] for r in report["rounds"]] == [[i, 1] for i in range(ROUNDS)]
    assert all(r["chunks_file_equal"] for r in report["rounds"]) and report["chunks_after_compaction"]
    assert report["reader_chunk_flushes"] == [1, 0]
    assert report["reader_compacted"] and report["chunks_whole_file"]


def test_catch_up_applies_complete_lines_only_and_never_cuts_the_journal(tmp_path):
    """A reader applies the records another process appended, leaves a line still being written for its next look
    (without truncating it: the writer is alive), and refuses a journal that does not extend the base it read."""
    path = str(tmp_path / "kv.json")
    writer = journal.FileState(path)
    Path(path).write_text("{}")
    live: dict = {}
    journal.flush(writer, journal.KVKind, live, lambda: None)  # no saved content yet: "rewritten" (already empty)
    reader = journal.FileState(path, across_processes=True)
    seen: dict = {}
    journal.adopt(reader, journal.KVKind, seen)
    for step in range(3):
        live = {**live, f"k{step}": {"step": step}}
        journal.flush(writer, journal.KVKind, live, lambda: None)
    assert len(journal.catch_up(reader, journal.KVKind, seen)) == 3 and seen == live
    assert journal.catch_up(reader, journal.KVKind, seen) == [] and reader.catch_ups == 2

    torn = b'{"u": {"k9": {"st'
    with open(journal.journal_path(path), "ab") as handle:
        handle.write(torn)
    size = Path(journal.journal_path(path)).stat().st_size
    assert journal.catch_up(reader, journal.KVKind, seen) == [] and "k9" not in seen
    assert Path(journal.journal_path(path)).stat().st_size == size  # not cut off
    with open(journal.journal_path(path), "ab") as handle:
        handle.write(b'ep": 9}}, "d": ["k0"]}\n')
    assert journal.catch_up(reader, journal.KVKind, seen) == [{"u": {"k9": {"step": 9}}, "d": ["k0"]}]
    assert set(seen) == {"k1", "k2", "k9"}

    # A journal shorter than what was read, or a replaced base: not the one read before, the caller reads whole.
    Path(journal.journal_path(path)).write_bytes(b"")
    assert journal.catch_up(reader, journal.KVKind, seen) is None
    Path(path).write_text('{"other": 1}')
    assert journal.catch_up(reader, journal.KVKind, seen) is None


def test_a_compaction_never_rewrites_what_another_process_appended_since(tmp_path):
    """At ``finalize_storages`` each process rewrites its files whole from what it holds; one that has not caught up
    with another's appends would drop them, so it leaves the file alone."""
    path = str(tmp_path / "kv.json")
    Path(path).write_text("{}")
    first, second = journal.FileState(path), journal.FileState(path)
    journal.adopt(first, journal.KVKind, {})
    journal.adopt(second, journal.KVKind, {})
    journal.flush(first, journal.KVKind, {"a": {"v": 1}}, lambda: None)
    journal.flush(second, journal.KVKind, {"b": {"v": 2}}, lambda: None)  # appended after the first's record
    rewritten = []
    first.compact = lambda: rewritten.append("first")
    second.compact = lambda: rewritten.append("second")
    assert not journal.compact(first)  # the second's append is not in what the first holds
    assert not journal.compact(second)  # nor the first's in what the second holds: it appended after it unseen
    held = {"b": {"v": 2}}
    journal.catch_up(second, journal.KVKind, held)  # both records, its own again (a no-op)
    assert held == {"a": {"v": 1}, "b": {"v": 2}}
    assert journal.compact(second) and rewritten == ["second"]
