"""Query-time state of the ``hipporag`` and ``prism`` modes, kept ready by inserts.

Both modes read an entity-name index and a fact index (``views/index.py:EmbeddingIndex``) and views derived from
the graph snapshot (HippoRAG's entity + passage graph with its PPR transition, the facts' vectors, the entity
vectors, FastRP). Built lazily, the first query after an insert paid for all of it (seconds to minutes on a fresh
index). With
``PrismRAG.prepare_query_indexes`` (the default) the insert does that work instead:

1. while documents are processed, every entity and relation upserted into LightRAG's vector stores hands its name
   or fact text (:func:`index_items`) to the insert's background embedder (``insert/prefetch.py``), which embeds
   them in batches and stages the vectors in the indexes;
2. at the end of every pipeline run, :func:`prepare_query_state` builds the new snapshot and its derived views
   (and the entity, relation and chunk matrices fidelis and prism read); the indexes' ``sync`` finds the staged
   vectors and embeds only what the stage missed;
3. ``initialize_storages`` runs it once for an existing index, so a restarted process answers warm too.

A failure there is logged, never raised: the inserted data is already stored, and the next query builds the same
state lazily.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
from typing import Iterator

from ...snapshot import GraphSnapshot
from ...vectors import RELATION_VECTORS, adopt_chunk_matrix, chunk_matrix, entity_matrix, relation_matrix
from .facts import fact_id, fact_text, fact_view, orient, predicate_of
from .fastrp import fastrp_cache
from .index import EmbeddingIndex
from .passage_graph import hippo_state, hipporag_graph
from .passage_rank import entity_num_chunks, name_keys

logger = logging.getLogger(__name__)


def index_items(rag, storage, data: dict) -> Iterator[tuple[EmbeddingIndex, str, str]]:
    """(index, id, text) for each row of an upsert into ``rag``'s entity or relation vector store that the
    name or fact index lacks. The texts are the ones the indexes embed at query time (``views/passage_graph.py`` and
    ``views/facts.py``), so a staged vector is exactly the one ``sync`` would compute."""
    state = hippo_state(rag)
    for record in data.values():
        if not isinstance(record, dict):
            continue
        if storage is rag.entities_vdb and record.get("entity_name"):
            name = str(record["entity_name"])
            if not state.name_index.has(name):
                yield state.name_index, name, name
        elif storage is rag.relationships_vdb and record.get("src_id") and record.get("tgt_id"):
            src, tgt = orient(str(record["src_id"]), str(record["tgt_id"]), record)
            fact = (src, predicate_of(record), tgt)
            if not state.fact_index.has(fact_id(fact)):
                yield state.fact_index, fact_id(fact), fact_text(fact)


def warm_snapshot(snapshot: GraphSnapshot, base: GraphSnapshot | None, keep_powers: bool = True) -> None:
    """The cheap per-snapshot caches the prism mode reads (FastRP updated from ``base`` when it can be; without the
    state an update needs unless ``keep_powers``)."""
    entity_num_chunks(snapshot)
    name_keys(snapshot, base)
    if snapshot.adj.nnz:
        fastrp_cache(snapshot, base, keep_powers)


def changes_graph(rag) -> bool:
    """Whether ``rag`` has changed the graph in this process (inserted, deleted, edited, merged: it published a
    graph change, ``seam.py``); a duck-typed instance without a seam counts as one that does. Only such a process keeps
    what an incremental update of the views needs (FastRP's powers)."""
    seam = rag.__dict__.get("prism_seam")
    return seam is None or seam.changes_graph


def pin_descriptions(rag, snapshot: GraphSnapshot) -> None:
    """The tokens of the graph's descriptions, pinned in the instance's tokenizer when it can pin
    (``backends/tokenizer.py``): every KG mode's context renders them, each query anew."""
    pin = getattr(rag.tokenizer, "pin_descriptions", None)
    if pin is not None:
        pin([d.get("description") for d in snapshot.node_data] + [d.get("description") for d in snapshot.edge_data])


VIEWS_READY, VIEWS_LOCK = "query_views_ready", "query_views_lock"


async def prepare_views(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None) -> None:
    """Every view of ``snapshot`` the hipporag, prism and fidelis modes read, cached on it (LightRAG's relation
    vectors only once a query has read them, see below); what is unchanged since ``base`` (the snapshot it replaces)
    is carried over, not read again: vectors of unchanged entities, relations and passages (``vectors.py``), the
    name and fact indexes (``views/index.py``), synonyms and FastRP. The tokens of the graph's descriptions are
    pinned in the tokenizer meanwhile (:func:`pin_descriptions`)."""
    async with snapshot.derived.setdefault(VIEWS_LOCK, asyncio.Lock()):
        if snapshot.derived.get(VIEWS_READY):
            return
        store = hippo_state(rag).fact_index.store
        # Names and facts in one flush of the vector cache, which the query does not wait for.
        async with store.one_flush(behind=True) if store is not None else contextlib.nullcontext():
            # FastRP and the other structural caches need only the graph: computed in a thread meanwhile.
            # LightRAG's relation vectors serve fidelis and the perspective knobs of the stock modes only (prism
            # scores relations by their fact texts): carried once a query of this process read them, else left
            # to the first such query (a copy of the relation store's vectors: 19 KB per passage on MuSiQue).
            read_before = base is not None and RELATION_VECTORS in base.derived
            relations = [relation_matrix(rag, snapshot, base)] if read_before else []
            await asyncio.gather(passages_then_chunks(rag, snapshot, base), fact_view(rag, snapshot, base),
                                 entity_matrix(rag, snapshot, base), *relations,
                                 asyncio.to_thread(warm_snapshot, snapshot, base, changes_graph(rag)),
                                 asyncio.to_thread(pin_descriptions, rag, snapshot))
        snapshot.derived[VIEWS_READY] = True
    snapshots = getattr(rag, "_snapshots", None)
    if snapshots is not None:  # duck-typed instances in tests and tools have none
        snapshots.release_previous(snapshot, base)


async def passages_then_chunks(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None) -> None:
    """The passage graph, then the chunk matrix (fidelis, prism): the passage view's first rows, which are the
    snapshot's chunks (``all_passage_ids``), so the records are read once."""
    view = await hipporag_graph(rag, snapshot, base)
    chunks = len(snapshot.chunk_ids)
    if view.passage_ids[:chunks] == snapshot.chunk_ids:
        adopt_chunk_matrix(snapshot, view.passage_vectors[:chunks], [d["content"] for d in view.passage_data[:chunks]])
    await chunk_matrix(rag, snapshot, base)


async def ensure_views(rag, snapshot: GraphSnapshot) -> None:
    """Before a query reads ``snapshot``: its views, prepared from the snapshot it replaced if no insert did it
    (after a deletion or an edit, which leave that to the first query, so a loop of edits pays nothing per edit).
    Without ``prepare_query_indexes`` each mode builds the views it reads, from scratch."""
    if not snapshot.derived.get(VIEWS_READY) and getattr(rag, "prepare_query_indexes", False):
        await prepare_views(rag, snapshot, rag._snapshots.previous)


SETTLE_MIN_NODES = 2_000  # graph size from which start-up settles the heap (a small index leaves too little)


def settle_heap(freeze: bool) -> None:
    """One full collection, then (``freeze``) every surviving object into Python's permanent generation.

    An index is mostly long-lived objects (graph, stores, views). Python's full collections, due each time
    long-lived objects grew by a quarter, scan all of them: a batch of 500 passages into a 6,000-passage index ran
    7 of them at 0.5 to 0.9 s each. Frozen objects are not scanned. They are still freed by reference counting; a
    frozen cycle that becomes garbage waits for the next settle, which unfreezes before it collects."""
    if freeze:
        gc.unfreeze()
    gc.collect()
    if freeze:
        gc.freeze()
    return_free_memory()


def return_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``); False where the C library has no
    such call (macOS, musl). Opening an index frees transient buffers (files' text, vectors read before they are
    copied into the indexes) that glibc keeps mapped: 80 MB resident for nothing after opening the 9,239-passage
    bench index, about 90 MB at 1,000 and 2,000 passages."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    return bool(trim(0))


async def prepare_query_state(rag, settle_from: int | None = None) -> bool:
    """Build what the first hipporag/prism query would build (see the module doc); True when it ran. Then, when
    the graph has at least ``settle_from`` entities, :func:`settle_heap` (after a large insert: 0; at start-up:
    :data:`SETTLE_MIN_NODES`; None, after a small insert, which leaves too few objects for a collection to be due)."""
    try:
        snapshot = await rag.graph_snapshot()
        await prepare_views(rag, snapshot, rag._snapshots.previous)
        # A large insert or a load left many new long-lived objects, so Python's next full collection is due: run
        # it here rather than inside the first query (once measured at 3x a warm query after 3,000 passages).
        if settle_from is not None and snapshot.num_nodes >= settle_from:
            settle_heap(getattr(rag, "gc_freeze", False))
    except Exception as exc:  # noqa: BLE001 - must never fail a completed insert
        logger.warning("hipporag/prism query state not prepared after insert (the next query will build it): %s",
                       exc)
        return False
    return True
