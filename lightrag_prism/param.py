"""PrismQueryParam: LightRAG's QueryParam plus the knobs of every lightrag_prism mode.

All new fields come after LightRAG's own (positional construction keeps working) and have defaults, so stock modes
behave exactly as before. ``None`` means "the mode's default": the ``prism`` mode turns the three perspectives on
with PrismRAG's quick-start values, the stock KG modes leave them off (see :func:`resolve_prism_knobs`).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, fields
from numbers import Integral, Real

import numpy as np
from lightrag import QueryParam

STOCK_MODES = ("local", "global", "hybrid", "naive", "mix", "bypass")
KG_STOCK_MODES = ("local", "global", "hybrid", "mix")
FUSION_METHODS = ("rrf", "score")

# PrismRAG quick-start values (seed README): what `mode="prism"` uses for knobs left at None.
PRISM_MODE_DEFAULTS = {"max_hop": 2, "top_neighbors": 30, "top_ppr_nodes": 5, "top_fastrp_nodes": 5,
                       "ppr_damping": 0.5}
# Inside local/global/hybrid/mix the perspectives are off unless asked for.
STOCK_MODE_DEFAULTS = {"max_hop": 0, "top_neighbors": 30, "top_ppr_nodes": 0, "top_fastrp_nodes": 0,
                       "ppr_damping": 0.85}


@dataclass
class PrismQueryParam(QueryParam):
    mode: str = "mix"  # any stock mode or a registered lightrag_prism mode (validated at query time)

    # --- PrismRAG perspectives (prism mode; opt-in inside local/global/hybrid/mix) ---
    max_hop: int | None = None
    top_neighbors: int | None = None
    multi_hop_relevance_threshold: float = 0.2
    top_ppr_nodes: int | None = None
    top_fastrp_nodes: int | None = None
    fusion_method: str = "rrf"
    ppr_damping: float | None = None  # None: 0.5 in prism (HippoRAG's value for passage graphs), 0.85 elsewhere
    ppr_edge_floor: float = 1.0  # PPR fact edge weight = co-occurrence * (max(cos(relation, query), 0) + floor)
    seed_temperature: float = 0.1
    enable_recognition: bool = False
    recognition_batch_size: int = 10
    # prism mode only (docs/prism.md): seeds from fact and name linking, chunks ranked by a passage-aware PPR
    prism_seed_facts: int = 10
    prism_seed_phrases: int = 5
    prism_name_linking: bool = True
    prism_expansion_weight: float = 0.15
    prism_passage_weight: float = 0.1
    prism_dense_head: int = 2
    prism_head_seed_weight: float = 1.0  # the dense head's share of the PPR personalization, x the entity seeds'
    prism_keyword_vectors: bool = False

    # --- HippoRAG 2 (hipporag mode); HippoRAG 2's settings: linking_top_k=5, passage_node_weight=0.05,
    # hipporag_dense_head=0 (defaults tuned offline on musique_train_100, see docs/hipporag.md) ---
    linking_top_k: int = 10
    max_filtered_facts: int = 4
    top_seed_phrases: int = 5
    passage_node_weight: float = 0.1
    hipporag_damping: float = 0.5
    enable_fact_filter: bool = True
    # passages ranked first by dense score, then PPR order; 0 = HippoRAG 2 (PPR alone), see docs/hipporag.md
    hipporag_dense_head: int = 2
    # entities the query names exactly are seeds too (as in prism), beside the facts
    hipporag_name_linking: bool = True
    # prism and hipporag: the question's words count in the first stage (the head, the passages' PPR weights) as
    # BM25 counts them, fused with the dense scores by reciprocal rank, the lexical rank weighted by lexical_weight
    # (retrievers/views/lexical.py); 0 (default): dense alone, as measured best where the graph ranks (docs/prism.md)
    lexical_weight: float = 0.0
    # prism and hipporag: a graph with fewer relations per passage than this has too little to say: the passages
    # are ranked by the BM25 + dense fusion instead (recorded in the fallbacks); 0 turns the check off
    thin_graph_relations: float = 4.0

    # prism and hipporag: the dense head's passages after the first are picked by maximal marginal relevance,
    # dense score - dense_head_novelty x cosine to the head so far (0 = dense order; docs/prism.md, "The head")
    dense_head_novelty: float = 0.3
    # prism and hipporag: rank 2 goes to the best ranked of the first bridge_pool passages whose title names an
    # entity the first passage names and the question does not (its second hop); 0 = off (docs/prism.md, "The bridge")
    bridge_pool: int = 10

    # --- FiDeLiS (fidelis mode); defaults are the official code's ---
    topic_entities: list[str] = field(default_factory=list)
    beam_top_n: int = 30
    beam_width: int = 3
    max_path_length: int = 3
    lookahead_alpha: float = 0.3

    # --- LLM rerankers (ensemble and tournament modes) ---
    expansion_queries_min: int = 5
    expansion_queries_max: int = 7
    per_query_k: int = 5
    retrieval_score_max: float = 100.0
    retrieval_score_min: float = 50.0
    llm_score_weight: float = 0.6
    retrieval_score_weight: float = 0.4
    ensemble_top_k: int = 21
    rerank_window_size: int = 10
    rerank_window_overlap: int = 3
    rerank_top_k: int = 20
    return_top_k: int = 10

    def __post_init__(self) -> None:
        check_field_types(self)
        if self.fusion_method not in FUSION_METHODS:
            raise ValueError(f"fusion_method must be one of {list(FUSION_METHODS)}, got {self.fusion_method!r}")
        for name in ("ppr_damping", "hipporag_damping"):
            value = getattr(self, name)
            if value is not None and not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {value!r}")
        for name in ("ppr_edge_floor", "prism_expansion_weight", "prism_passage_weight", "prism_head_seed_weight",
                     "dense_head_novelty", "lexical_weight", "thin_graph_relations"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.seed_temperature <= 0:
            raise ValueError(f"seed_temperature must be > 0, got {self.seed_temperature!r}")
        if self.rerank_window_overlap >= self.rerank_window_size:
            raise ValueError("rerank_window_overlap must be smaller than rerank_window_size")
        if self.expansion_queries_min > self.expansion_queries_max:
            raise ValueError("expansion_queries_min must not exceed expansion_queries_max")
        if isinstance(self.topic_entities, str):
            self.topic_entities = [self.topic_entities]
        for name in ("beam_top_n", "beam_width", "max_path_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.lookahead_alpha < 0:
            raise ValueError(f"lookahead_alpha must be >= 0, got {self.lookahead_alpha!r}")


_SCALARS = {int: "a non-negative integer", float: "a finite number", bool: "True or False", str: "a string"}


def _scalar_fields(cls) -> dict[str, tuple[type, bool]]:
    """name -> (scalar type, None allowed) of each field annotated int, float, bool or str, optionally ``| None``;
    lists, literals and callables are left to the code that reads them."""
    out, hints = {}, typing.get_type_hints(cls)
    for f in fields(cls):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) == 1 and type(None) in typing.get_args(hint)
        scalar = args[0] if optional else hint
        if scalar in _SCALARS:
            out[f.name] = (scalar, optional)
    return out


def check_field_types(param) -> None:
    """One ``ValueError`` naming the field for a value of the wrong type (LightRAG's fields too: ``top_k="40"``
    failed deep inside a query with "'>' not supported between instances of 'int' and 'str'"): integers are
    counts (>= 0), floats finite, booleans True, False, 0 or 1; numpy scalars are accepted."""
    for name, (scalar, optional) in _SCALAR_FIELDS.items():
        value = getattr(param, name)
        if value is None and optional:
            continue
        kind = type(value)
        if kind is scalar:  # the common case first: the ABC checks below are slow
            ok = (scalar is not int or value >= 0) and (scalar is not float or math.isfinite(value))
        elif scalar is int:
            ok = isinstance(value, Integral) and kind is not bool and value >= 0
        elif scalar is float:
            ok = isinstance(value, Real) and kind is not bool and math.isfinite(value)
        elif scalar is bool:  # LightRAG took any truthy value: 0 and 1 stay accepted
            ok = kind is np.bool_ or (isinstance(value, Integral) and value in (0, 1))
        else:
            ok = isinstance(value, scalar)
        if not ok:
            raise ValueError(f"{name} must be {_SCALARS[scalar]}{' or None' if optional else ''}, got {value!r}")


_SCALAR_FIELDS = _scalar_fields(PrismQueryParam)


def resolve_prism_knobs(param: QueryParam) -> dict[str, float]:
    """The effective perspective knobs for ``param.mode`` (None -> the mode's default)."""
    defaults = PRISM_MODE_DEFAULTS if param.mode == "prism" else STOCK_MODE_DEFAULTS
    return {name: (getattr(param, name, None) if getattr(param, name, None) is not None else default)
            for name, default in defaults.items()}


def perspectives_enabled(param: QueryParam) -> bool:
    knobs = resolve_prism_knobs(param)
    return bool(knobs["max_hop"] or knobs["top_ppr_nodes"] or knobs["top_fastrp_nodes"]) or bool(
        getattr(param, "enable_recognition", False)
    )
