"""LightRAG's insert-time KV stores (documents, per-document entities and relations, per-entity and per-relation
chunk lists) are read from disk on first use: a process that only answers queries, in any mode, never reads them;
an insert or a deletion in a process that has not read them yet reads them first and loses nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNREAD, READ = [True] * 5, [False] * 5


def _run(working_dir, step: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.storages.read_on_first_use_worker", str(working_dir), step],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_queries_never_read_them_and_an_insert_or_a_deletion_loses_nothing(tmp_path):
    built = _run(tmp_path, "build")
    assert built["docs"] == ["doc-curie", "doc-paris"] and "Marie Curie" in built["entities"]
    assert built["entities_without_chunk_list"] == []
    inserted = _run(tmp_path, "query_then_insert")
    assert inserted["opened"] == inserted["queried"] == UNREAD  # eight modes answered without them
    assert inserted["inserted"] == READ
    assert inserted["docs"] == ["doc-curie", "doc-paris", "doc-irene"]
    assert set(built["entities"]) < set(inserted["entities"]) and inserted["entities_without_chunk_list"] == []
    deleted = _run(tmp_path, "delete")
    assert deleted["opened"] == UNREAD and deleted["deleted"] == READ
    assert deleted["docs"] == ["doc-curie", "doc-irene"]
    assert "Marie Curie" in deleted["entities"] and deleted["entities_without_chunk_list"] == []
    reopened = _run(tmp_path, "open")  # what the deletion wrote is what the next process reads
    assert reopened["docs"] == deleted["docs"] and reopened["entities"] == deleted["entities"]
