"""The HippoRAG 2 graph view of a LightRAG knowledge graph, built from the snapshot through public storage APIs.

Nodes are ``[entities (snapshot order); passages]``. Edges (one symmetric CSR, cached in ``snapshot.derived``):

* **fact edges**: the snapshot's relations, weight = LightRAG's co-occurrence ``weight`` (HippoRAG: triple count);
* **passage-entity edges**: ``snapshot.entity_chunks`` incidence, weight 1.0;
* **synonym edges**: entity pairs whose *name* embeddings (HippoRAG's phrase embeddings) have cosine >= 0.8, found
  with the blocked top-k kernel :func:`lightrag_prism.graph.knn.topk_cosine` (never an N x N matrix), weight =
  cosine, stored once per canonical ``(min, max)`` name pair. They are kept per instance in :class:`SynonymState`
  and updated incrementally: on a new snapshot only entities not seen before query the kNN (against all entities);
  pairs of removed entities are dropped; when that is all that changed, the previous view's synonym edges are
  renumbered by the patch's node moves. Names are Unicode-preserving (HippoRAG's ``[^A-Za-z0-9 ]`` stripping is not
  applied), so ``"Thomas C. Südhof"`` or ``"東京"`` work.

**All passages, backend-neutral.** ``BaseKVStorage`` has no key listing in LightRAG 1.5.7, so passage ids are the
union of (a) ``chunks_list`` of every PROCESSED document in ``rag.doc_status`` (``get_docs_by_statuses``, abstract on
every doc-status backend) and (b) the chunks the graph references (``snapshot.chunk_ids``, which covers
``ainsert_custom_kg`` chunks that have no doc status). Their records come from ``rag.text_chunks.get_by_ids``
(ids it lacks are dropped) and their vectors from ``rag.chunks_vdb.get_vectors_by_ids`` (re-embedded if missing).
After a small change only the records ``text_chunks`` wrote since the previous view are read again (its write log,
``graph_changes.KeyChanges``); the rest, with their vectors, are the previous view's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
import unicodedata
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from lightrag.base import DocStatus

from ...graph import knn
from ...graph.ppr import Transition, transition_matrix
from ...patches import pg_reads
from ...plugin_state import find_plugin_state
from ...prose import passage_title
from ...snapshot import GraphSnapshot, node_moves
from ...vectors import CHUNK_VECTORS_KEPT, chunk_records, kept_vectors, vectors_carrying
from .index import EmbeddingIndex, IndexRows
from .lexical import Lexicon, LexicalIndex, fused_scores
from .passage_rank import PASSAGE_PPR_DTYPE, PassageGraph, build_passage_graph, dense_head_rows

logger = logging.getLogger(__name__)

SYNONYM_THRESHOLD = 0.8  # HippoRAG's synonymy_edge_sim_threshold
SYNONYM_TOPK = 100  # HippoRAG v1 stops after 100 neighbours per phrase (v2 asks kNN for 2047, same cap in practice)
EMBED_BATCH = 256


def synonym_eligible(name: str) -> bool:
    """HippoRAG links phrases with > 2 alphanumeric chars; counted Unicode-aware, and CJK names need only 2."""
    alnum = [ch for ch in name if ch.isalnum()]
    wide = any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in alnum)
    return len(alnum) >= (2 if wide else 3)


async def embed_in_batches(rag, texts: list[str]) -> np.ndarray:
    """``rag.embedding_func`` over ``texts`` in batches (its own concurrency limit applies)."""
    if not texts:
        return np.zeros((0, rag.embedding_func.embedding_dim), np.float32)
    parts = await asyncio.gather(*(rag.embedding_func(texts[i:i + EMBED_BATCH])
                                   for i in range(0, len(texts), EMBED_BATCH)))
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts])


#: A trailing word saying what kind of thing a code name is ("the Response object", "FooError exceptions"). Not
#: words that end proper names in prose ("Apollo program", "Nimitz class", "Periodic table").
KIND_WORDS = frozenset({"object", "objects", "exception", "exceptions", "function", "functions", "method", "methods",
                        "module", "modules", "command", "commands", "parameter", "parameters", "setting", "settings",
                        "option", "options", "variable", "variables", "attribute", "attributes"})
#: "postgresql.conf" is a file name, not the ``conf`` of a dotted path.
FILE_SUFFIXES = frozenset({"conf", "py", "json", "yaml", "yml", "txt", "md", "html", "cfg", "ini", "toml", "sql",
                           "sh", "xml", "csv", "log"})
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


@functools.lru_cache(maxsize=1 << 16)
def variant_key(name: str) -> str:
    """What a name is without the ways one text writes it and another does not: case, a leading article, a trailing
    kind word, a dotted path ("pkg.client.Response" -> "response"), call parentheses and CLI dashes. Names sharing
    a key are joined by a synonym edge of weight 1. Empty for names too short to say anything
    (:func:`synonym_eligible`) and for a kind word alone."""
    words = _LEADING_ARTICLE.sub("", " ".join(name.casefold().split())).split(" ")
    if len(words) > 1 and words[-1] in KIND_WORDS:
        words = words[:-1]
    key = " ".join(words).removesuffix("()").lstrip("-")
    if " " not in key and "." in key.strip("."):
        last = key.strip(".").rpartition(".")[2]
        key = key if last in FILE_SUFFIXES else last
    return key if synonym_eligible(key) and key not in KIND_WORDS else ""


@dataclass
class SynonymState:
    """Synonym pairs keyed by entity names, carried from one snapshot to the next."""

    seen: set[str] = field(default_factory=set)
    eligible: set[str] = field(default_factory=set)  # seen names that may get synonyms (checked once per name)
    pairs: dict[tuple[str, str], float] = field(default_factory=dict)
    knn_queries: int = 0  # entities that have queried the kNN so far (incrementality is tested on this)
    token: object = field(default_factory=object)  # new at each update: a view records the one it was made at
    added: bool = False  # the last update added pairs (else it only dropped the pairs of names gone)
    variants: dict[str, list[str]] = field(default_factory=dict)  # variant_key -> the seen names sharing it

    def update(self, names: list[str], vectors, changed: tuple[list[str], list[str]] | None = None) -> None:
        """Bring the pairs up to date with entity ``names``; ``vectors[rows]`` gives the unit vectors of the names
        at ``rows`` (an array, or the name index's :class:`IndexRows`, read only when a name is new). ``changed``:
        the names gone and come since the names of the last update, when the caller knows them (snapshot moves)."""
        self.token, self.added = object(), False
        # Set operations on what came and went: after a small change, per-name Python passes over every name
        # (20,000 at 3,000 passages) were most of this update's 14 ms; the sets of every name, most of the rest.
        if changed is not None:
            gone, came = set(changed[0]), set(changed[1])
        else:
            current = set(names)
            gone, came = self.seen - current, current - self.seen
        if gone:
            self.pairs = {p: w for p, w in self.pairs.items() if p[0] not in gone and p[1] not in gone}
            self.seen -= gone
            self.eligible -= gone
            for name in gone:
                group = self.variants.get(variant_key(name), [])
                if name in group:
                    group.remove(name)
        self._pair_variants(came)
        new_eligible = {n for n in came if synonym_eligible(n)}
        self.eligible |= new_eligible
        self.seen |= came
        if not new_eligible:
            return
        self.added = True
        eligible = np.fromiter((n in self.eligible for n in names), dtype=bool, count=len(names))
        new = np.fromiter((n in new_eligible for n in names), dtype=bool, count=len(names))
        corpus_rows = np.flatnonzero(eligible)
        position = np.full(len(names), -1, dtype=np.int64)
        position[corpus_rows] = np.arange(len(corpus_rows))
        query_rows = np.flatnonzero(new)
        self.knn_queries += len(query_rows)
        idx, sim = knn.topk_cosine(vectors[query_rows], vectors[corpus_rows], SYNONYM_TOPK,
                                   threshold=SYNONYM_THRESHOLD, exclude_self_ids=position[query_rows])
        qi, slot = np.nonzero(idx >= 0)
        for q, c, w in zip(query_rows[qi].tolist(), corpus_rows[idx[qi, slot]].tolist(), sim[qi, slot].tolist()):
            a, b = names[q], names[c]
            key = (a, b) if a < b else (b, a)
            self.pairs[key] = max(float(w), self.pairs.get(key, 0.0))  # a variant pair keeps its weight

    def _pair_variants(self, came: set[str]) -> None:
        """Pairs of weight 1 between each new name and the seen names written differently for the same thing
        (:func:`variant_key`: "Response", "Response object", "pkg.client.Response"; "The Old Ropeworks")."""
        for name in sorted(came):
            key = variant_key(name)
            if not key:
                continue
            group = self.variants.setdefault(key, [])  # a list: one per name, and most hold one
            for other in group:
                self.pairs[(name, other) if name < other else (other, name)] = 1.0
                self.added = True
            group.append(name)


NAME_INDEX, FACT_INDEX = "hipporag_entity_names", "hipporag_facts"  # their names in the vector store


@dataclass
class HippoState:
    """Per-instance state of the hipporag mode: persistent indexes and the synonym pairs."""

    name_index: EmbeddingIndex
    fact_index: EmbeddingIndex
    synonyms: SynonymState = field(default_factory=SynonymState)
    lexicon: Lexicon = field(default_factory=Lexicon)  # each passage tokenized once (retrievers/views/lexical.py)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


STATE_KEY = "hipporag_state"


def _views_of(rag) -> dict:
    """Where an instance's query-view state lives: its seam's ``views`` (a PrismRAG, ``seam.py``), else the object's
    own attributes (duck-typed instances in tests and tools)."""
    seam = rag.__dict__.get("prism_seam")
    return seam.views if seam is not None else rag.__dict__


def hippo_state(rag) -> HippoState:
    state = _views_of(rag).get(STATE_KEY)
    if state is None:
        owner = find_plugin_state(rag)  # None: a duck-typed instance (tests, tools) keeps them in memory
        vectors = owner.vectors if owner is not None else None
        # the fact index is scanned whole by every query: column-major (index.py)
        state = HippoState(EmbeddingIndex(NAME_INDEX, vectors),
                           EmbeddingIndex(FACT_INDEX, vectors, column_major=True))
        _views_of(rag)[STATE_KEY] = state
    return state


def forget_hippo_state(rag) -> None:
    """Drop the instance's in-memory indexes and synonym pairs (the next use starts from the vector store)."""
    _views_of(rag).pop(STATE_KEY, None)


@dataclass
class HippoGraph:
    """Entities ``[0, n_entities)`` then passages; :attr:`adj` symmetric over both."""

    n_entities: int
    passage_ids: list[str]
    passage_data: list[dict]
    passage_vectors: np.ndarray
    passage_valid: np.ndarray  # False for ids text_chunks no longer holds (never returned)
    entity_num_chunks: np.ndarray  # passages containing each entity (HippoRAG's ent_node_to_num_chunk)
    structure: PassageGraph  # ``adj`` with its fact weights apart, so prism re-weights them per query
    transition: Transition  # of ``adj`` in the structure's solve order (``PassageGraph.order``)
    n_synonym_edges: int
    synonyms: sp.csr_matrix  # the synonym block over the entities
    name_rows: IndexRows  # the name index's row of each entity
    synonym_token: object  # ``SynonymState.token`` after its update (the next view may carry it by node moves)
    records_read_at: int | None  # the text_chunks write log's position when the records were read (None: no log)
    lexical: LexicalIndex  # BM25 over the passages (the lexical channel)
    build_seconds: dict[str, float]

    @functools.cached_property
    def adj(self) -> sp.csr_matrix:
        """The graph in node order, co-occurrence weights on the facts (built when first asked for: queries solve
        on ``transition``, in solve order)."""
        return self.structure.adjacency()

    def dense_scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of every passage to the query; a passage text_chunks lost gets the minimum, so it can be neither
        a dense head nor the dense maximum."""
        valid = self.passage_valid
        if not len(valid):
            return np.zeros(0)
        dense = self.passage_vectors @ query_vector
        return dense if valid.all() else np.where(valid, dense, dense[valid].min() if valid.any() else 0.0)

    def first_stage(self, query_vector: np.ndarray, question: str, lexical_weight: float) -> np.ndarray:
        """The passage scores that pick the head and weight the passages in the PPR's personalization: the dense
        scores, or with a lexical weight their reciprocal-rank fusion with BM25 (``retrievers/views/lexical.py``)."""
        dense = self.dense_scores(query_vector)
        return fused_scores(dense, self.lexical.scores(question), lexical_weight) if lexical_weight > 0 else dense

    @functools.cached_property
    def passage_row(self) -> dict[str, int]:
        """Passage id -> row."""
        return dict(zip(self.passage_ids, range(len(self.passage_ids))))

    @functools.cached_property
    def home_rows(self) -> dict[str, tuple[int, ...]]:
        """:func:`variant_key` of a name -> the passages titled by it (a long section cut into several chunks gives
        several)."""
        homes: dict[str, list[int]] = {}
        for row, data in enumerate(self.passage_data):
            if data.get("home_of") and data["valid"]:
                homes.setdefault(data["home_of"], []).append(row)
        return {key: tuple(rows) for key, rows in homes.items()}

    def head_rows(self, dense: np.ndarray, head: int, novelty: float) -> np.ndarray:
        """The head passages (``passage_rank.dense_head_rows``) among the passages text_chunks still holds."""
        return dense_head_rows(np.where(self.passage_valid, dense, -np.inf), self.passage_vectors, head, novelty)


async def all_passage_ids(rag, snapshot: GraphSnapshot) -> list[str]:
    """Graph-referenced chunk ids first (snapshot order), then the other chunks of processed documents."""
    fast_read = getattr(rag.doc_status, "processed_chunk_lists", None)  # PrismJsonDocStatusStorage's
    extra = await fast_read(DocStatus.PROCESSED.value) if fast_read is not None else None
    if extra is None:
        extra = await pg_reads.processed_chunk_lists(rag.doc_status, DocStatus.PROCESSED.value)
    if extra is None:
        docs = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
        extra = [chunk for status in docs.values() for chunk in getattr(status, "chunks_list", None) or []]
    return list(dict.fromkeys(list(snapshot.chunk_ids) + extra))


PASSAGE_FIELDS = ("content", "file_path")


def _passage_data(record: dict | None, home_of: str | None = None) -> dict:
    """A passage's text, file, whether text_chunks holds it, and the :func:`variant_key` of its title (the
    extractor's topic, ``prose.passage_title``; "" without one): the passage is the home of the entity of that name
    (``ranking.bridge_home``). ``home_of``: that key when already known for this text."""
    record = record or {}
    content = record.get("content", "")
    if home_of is None:
        title = passage_title(content) if content else None
        home_of = variant_key(title) if title else ""
    return {"content": content, "file_path": record.get("file_path", "unknown_source"), "valid": bool(record),
            "home_of": home_of}


async def _passages(rag, snapshot: GraphSnapshot, base: "HippoGraph | None", written: frozenset | None
                    ) -> tuple[list[str], list[dict], np.ndarray, np.ndarray]:
    """Every passage's id, record, vector and whether text_chunks holds it. With ``written`` (the chunk ids written
    since ``base`` read its records), the records of the others are ``base``'s and only these are read: after a small
    change, reading all 3,000 records was a query of 30-80 ms on PostgreSQL and 14 ms on the JSON store. Vectors of
    passages whose id and text ``base`` had are carried over."""
    ids = await all_passage_ids(rag, snapshot)
    at = dict(zip(base.passage_ids, range(len(base.passage_ids)))) if base is not None else {}
    # The base row whose record is still this passage's (-1: read it; all of them without ``written``).
    kept = np.fromiter((-1 if written is None or pid in written else at.get(pid, -1) for pid in ids),
                       dtype=np.int64, count=len(ids))
    if base is not None:
        live = kept >= 0
        kept[live] = np.where(base.passage_valid[kept[live]], kept[live], -1)  # a record base lacked: read again
    read = np.flatnonzero(kept < 0).tolist()
    records = await chunk_records(rag, [ids[k] for k in read], PASSAGE_FIELDS)
    data = [base.passage_data[j] if j >= 0 else None for j in kept.tolist()] if base is not None else [None] * len(ids)
    sources = kept
    for k, record in zip(read, records):
        # a record read again with the text base had keeps its vector and its title (every record is read again
        # after another process changed the graph: titles parsed anew were 0.2 s at 9,000 passages)
        j = at.get(ids[k])
        same = j is not None and base.passage_valid[j] and base.passage_data[j]["content"] == (record or {}).get(
            "content", "")
        data[k] = _passage_data(record, base.passage_data[j]["home_of"] if same else None)
        if same:
            sources[k] = j
    texts = [d["content"] for d in data]
    base_rows = base.passage_vectors if base is not None else None
    # A passage without a record (a deleted chunk LightRAG's deletion left an entity naming) has no vector: its
    # empty text is not embedded, and it is never ranked (``passage_valid``).
    valid = np.fromiter((d["valid"] for d in data), dtype=bool, count=len(data))
    vectors = await vectors_carrying(
        rag, rag.chunks_vdb, sources, base_rows, lambda i: (ids[i], texts[i]), absent=~valid,
        kept=kept_vectors(rag, rag.chunks_vdb, CHUNK_VECTORS_KEPT),
        base_item=(lambda j: (base.passage_ids[j], base.passage_data[j]["content"])) if base is not None else None)
    return ids, data, vectors, valid


def synonym_adjacency(snapshot: GraphSnapshot, pairs: dict) -> sp.csr_matrix:
    """Symmetric N x N CSR of the synonym edges (weight = name cosine), one pass over the pairs."""
    n, index = snapshot.num_nodes, snapshot.node_index
    syn = [(index[a], index[b], w) for (a, b), w in pairs.items()]
    rows = np.fromiter((s[0] for s in syn), np.int64, len(syn))
    cols = np.fromiter((s[1] for s in syn), np.int64, len(syn))
    weights = np.fromiter((s[2] for s in syn), np.float64, len(syn))
    return sp.csr_matrix((np.concatenate([weights, weights]), (np.concatenate([rows, cols]),
                          np.concatenate([cols, rows]))), shape=(n, n))


def moved_synonyms(base_synonyms: sp.csr_matrix, position: np.ndarray, n: int) -> sp.csr_matrix:
    """The synonym edges of a base snapshot renumbered by its :class:`NodeMoves` ``position`` (base row -> row, -1:
    gone); edges of gone nodes drop out. Equal to :func:`synonym_adjacency` when the pairs only lost those of the
    names gone, without a Python pass over every pair."""
    coo = base_synonyms.tocoo()
    rows, cols = position[coo.row], position[coo.col]
    keep = (rows >= 0) & (cols >= 0)
    return sp.csr_matrix((coo.data[keep], (rows[keep], cols[keep])), shape=(n, n))


def passage_incidence(snapshot: GraphSnapshot, n_passages: int) -> sp.csr_matrix:
    """N x P entity -> passage incidence (weight 1.0); passages beyond the snapshot's chunks have no entity."""
    inc = snapshot.entity_chunks
    return sp.csr_matrix((np.ones(inc.nnz), inc.indices, inc.indptr), shape=(snapshot.num_nodes, n_passages))


async def hipporag_graph(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> HippoGraph:
    """The graph view of ``snapshot`` (built once per snapshot version, synonyms updated incrementally, passage
    vectors carried over from ``base``'s view)."""
    cached = snapshot.derived.get("hipporag_graph")
    if cached is not None:
        return cached
    state = hippo_state(rag)
    async with state.lock:
        if "hipporag_graph" in snapshot.derived:
            return snapshot.derived["hipporag_graph"]
        timings, start = {}, time.perf_counter()
        names = list(snapshot.node_ids)
        base_view = base.derived.get("hipporag_graph") if base is not None else None
        moves = node_moves(snapshot, base)
        # the base's names keep their rows in the name index (index.py)
        carried = ((base_view.name_rows, moves.base_rows(len(names)))
                   if moves is not None and base_view is not None else None)
        name_rows = await state.name_index.sync(names, names, lambda t: embed_in_batches(rag, t), carried)
        timings["name_embeddings"] = time.perf_counter() - start
        start = time.perf_counter()
        token_before = state.synonyms.token
        carried_names = moves is not None and base_view is not None and base_view.synonym_token is token_before
        await asyncio.to_thread(state.synonyms.update, names, name_rows,  # no name left: the pairs empty
                                (moves.gone, moves.new) if carried_names else None)
        if carried_names and not state.synonyms.added:  # the pairs only lost those of the names gone
            synonyms = moved_synonyms(base_view.synonyms, moves.position, len(names))
        else:
            synonyms = synonym_adjacency(snapshot, state.synonyms.pairs)
        timings["synonyms"] = time.perf_counter() - start
        # Records written since the base view read them, from the instance's log of text_chunks writes. Only for a
        # snapshot patched from ``base``: a change the logs cannot see (another process, ``graph_changed``) makes the
        # snapshot a whole read, and the records are then read whole too.
        log = getattr(getattr(rag, "_snapshots", None), "chunk_changes", None)
        records_read_at = log.position if log is not None else None  # a write ending during the read: read next time
        written = None
        if moves is not None and base_view is not None and base_view.records_read_at is not None and log is not None:
            written = log.since(base_view.records_read_at)
            log.forget_through(base_view.records_read_at)  # later views carry from this one or read whole
        ids, data, vectors, valid = await _passages(rag, snapshot, base_view, written)
        start = time.perf_counter()
        lexical = await asyncio.to_thread(LexicalIndex.build, state.lexicon, ids, [d["content"] for d in data])
        timings["lexical"] = time.perf_counter() - start
        structure = build_passage_graph(snapshot, synonyms, passage_incidence(snapshot, len(ids)))
        transition = transition_matrix(structure.weighted()[0], symmetric=True, dtype=PASSAGE_PPR_DTYPE)
        num_chunks = np.asarray(snapshot.entity_chunks.sum(axis=1)).ravel() if names else np.zeros(0)
        view = HippoGraph(n_entities=len(names), passage_ids=ids, passage_data=data, passage_vectors=vectors,
                          passage_valid=valid,
                          entity_num_chunks=num_chunks, structure=structure,
                          transition=transition,
                          n_synonym_edges=len(state.synonyms.pairs), synonyms=synonyms, name_rows=name_rows,
                          synonym_token=state.synonyms.token, records_read_at=records_read_at,
                          lexical=lexical, build_seconds=timings)
        snapshot.derived["hipporag_graph"] = view
        return view
