"""What importing lightrag_prism and building a PrismRAG replace in LightRAG: never its storage layer, and nothing
outside the version-checked registry of private symbols (``patches/private.py``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("replaced_symbols.py")


@pytest.fixture(scope="module")
def replaced(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("replaced")
    run = subprocess.run([sys.executable, str(SCRIPT), str(work / "rag")], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def storage_layer(names: list[str]) -> list[str]:
    return [name for name in names if name.startswith(("lightrag.kg.", "nano_vectordb"))]


def test_importing_the_plugin_replaces_nothing_in_lightrags_storage_layer(replaced):
    assert storage_layer(replaced["at_import"]) == []
    assert replaced["at_import"], "the query-stage wrappers are expected here: is the script measuring anything?"


def test_a_file_backed_prism_rag_leaves_lightrags_storage_classes_alone(replaced):
    assert storage_layer(replaced["after_prism_rag"]) == []


def test_every_replaced_symbol_is_in_the_version_checked_registry(replaced):
    registry = set(replaced["registry"])
    assert sorted(set(replaced["after_prism_rag"]) - registry) == []


TIMES = re.compile(r"\b1[6-9]\d{8}(?:\d{9})?\b"  # Unix seconds, and LightRAG's nanosecond write sequence
                   r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?"  # ISO times
                   r"|insert_\d{8}_\d{6}_[0-9a-f]+")  # track ids carry the time


def plain_instance_files(work: Path, mode: str) -> dict[str, str]:
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("stock_files.py")), str(work), mode],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr[-3000:]
    return {path.name: TIMES.sub("<time>", path.read_text(encoding="utf-8"))
            for path in sorted((work / "plain").iterdir())}


def test_a_plain_lightrag_writes_the_same_files_beside_a_prism_rag_as_without_the_plugin(tmp_path):
    """The same two documents indexed by a plain LightRAG in a process that never imported the plugin, and in one
    that imported it and keeps a PrismRAG open on other files meanwhile: the same files, byte for byte, once the
    times are masked (no journal, LightRAG's own writers and formats)."""
    without = plain_instance_files(tmp_path / "without", "plain")
    beside = plain_instance_files(tmp_path / "beside", "plugin")
    assert (tmp_path / "beside-prism" / "prism" / "vdb_chunks.json").exists()  # the PrismRAG did index
    assert "graph_chunk_entity_relation.graphml" in without and "vdb_entities.json" in without
    assert list(beside) == list(without)
    for name in without:
        assert beside[name] == without[name], name
