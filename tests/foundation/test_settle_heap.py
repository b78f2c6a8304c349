"""``settle_heap``: after a large insert the surviving objects leave the collector's scans (``gc.freeze``), and a
frozen cycle that became garbage is reclaimed by the next settle; ``PrismRAG(gc_freeze=False)`` only collects."""

from __future__ import annotations

import gc
import weakref

import pytest

from lightrag_prism import PrismRAG
from lightrag_prism.insert.group_commit import PACED_MIN_PARALLEL
from lightrag_prism.retrievers.views.query_state import settle_heap
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func


class Node:
    pass


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def cycle() -> tuple[Node, weakref.ref]:
    node = Node()
    node.self = node
    return node, weakref.ref(node)


def test_survivors_are_frozen_and_a_frozen_cycle_is_reclaimed_by_the_next_settle():
    node, alive = cycle()
    settle_heap(freeze=True)
    assert gc.get_freeze_count() > 0
    assert not any(obj is node for obj in gc.get_objects())  # out of every generation the collector scans
    del node
    gc.collect()
    assert alive() is not None  # frozen: a plain collection does not see it
    settle_heap(freeze=True)
    assert alive() is None


def test_without_freezing_only_collects():
    node, alive = cycle()
    del node
    settle_heap(freeze=False)
    assert alive() is None and gc.get_freeze_count() == 0


@pytest.mark.asyncio
@pytest.mark.parametrize("freeze", [True, False])
async def test_a_large_insert_settles_the_heap_as_the_instance_says(tmp_path, freeze):
    rag = PrismRAG(working_dir=str(tmp_path), workspace=tmp_path.name, embedding_func=hash_embedding_func(),
                   tokenizer=offline_tokenizer(), gc_freeze=freeze)
    await rag.initialize_storages()
    try:
        assert gc.get_freeze_count() == 0  # an empty index: nothing settled at start-up
        await rag.ainsert([f"Person {i} was born in Town {i}." for i in range(PACED_MIN_PARALLEL)])
        assert (gc.get_freeze_count() > 0) == freeze
    finally:
        await rag.finalize_storages()
