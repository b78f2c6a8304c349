"""benchmarks/profile_query.py: its timers reach every stage they name, account for a query's time, and leave."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from pathlib import Path

import pytest
from lightrag.utils import EmbeddingFunc

from lightrag_prism.eval.datasets import Dataset, Passage, Question
from lightrag_prism.retrievers.views import passage_rank
from tests.retrievers._kg import CHUNKS, DIM, QUERY, _embed, make_rag

pytestmark = pytest.mark.asyncio
ROOT = Path(__file__).resolve().parents[2]
EMBED_SECONDS = 0.03  # a question's embedding takes this long here: long enough to show where it is counted
# the toy graph is far thinner than thin_graph_relations: with the check off, the walk ranks and its stages run
PRISM, HIPPORAG = "prism:thin_graph_relations=0", "hipporag:thin_graph_relations=0"
WALKED = [PRISM, HIPPORAG]


async def _slow_embed(texts, **kwargs):
    await asyncio.sleep(EMBED_SECONDS)
    return await _embed(texts, **kwargs)


def _profiler():
    spec = importlib.util.spec_from_file_location("profile_query", ROOT / "benchmarks" / "profile_query.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("profile_query", module)
    spec.loader.exec_module(module)
    return module


def _toy_dataset() -> Dataset:
    passages = [Passage(id=alias, title="", text=text) for alias, text in CHUNKS.items()]
    questions = [Question(id="q1", text=QUERY, gold_passage_ids=("c_alice", "c_blue"), answer="Blue River"),
                 Question(id="q2", text="Who opened a painting exhibition at Gallery Nine?",
                          gold_passage_ids=("c_bob",), answer="Bob Stone")]
    return Dataset(name="toy", passages=passages, questions=questions)


async def _profile_all_modes(pq, rag, times, timer_in_place) -> None:
    """Two toy questions to naive, prism and hipporag with the timers installed (``timer_in_place()`` checked inside);
    the rag is finalized after."""
    try:
        with times.installed():
            assert timer_in_place()
            await pq.profile(rag, _toy_dataset(), ["naive", *WALKED], 2, times)
    finally:
        await rag.finalize_storages()


async def test_stage_timers_account_for_each_query_and_are_removed_after(tmp_path):
    pq = _profiler()
    original_ppr = passage_rank.passage_ppr
    rag = await make_rag(tmp_path, embedding_func=EmbeddingFunc(embedding_dim=DIM, max_token_size=8192,
                                                                func=_slow_embed, model_name="hash-bow-slow"))
    times = pq.StageTimes()
    await _profile_all_modes(pq, rag, times, lambda: passage_rank.passage_ppr is not original_ppr)
    assert passage_rank.passage_ppr is original_ppr  # the run leaves no timer behind

    assert {mode: len(queries) for mode, queries in times.per_mode.items()} == {"naive": 2, PRISM: 2, HIPPORAG: 2}
    ppr = "  PPR over entities and passages"
    for mode, queries in times.per_mode.items():
        for stages in queries:
            assert stages[pq.EMBED] >= EMBED_SECONDS  # each query embeds its question: the cache is emptied first
            assert stages[pq.TOKENIZER] > 0  # LightRAG counts the context's tokens in every mode
            # the parts are disjoint: the retriever's own embedding is counted once, as the embedding's
            assert stages[pq.REST] >= 0
            assert stages["whole query"] >= stages[pq.EMBED] + stages.get(pq.RETRIEVER, 0.0)
            if mode == "naive":  # LightRAG's own vector search: no plugin retriever ran
                assert pq.RETRIEVER not in stages and ppr not in stages
            else:
                assert stages[pq.RETRIEVER] >= stages[ppr] + stages["  fact scan"] > 0
    fastrp = "  FastRP (its own thread)"
    assert fastrp in times.per_mode[PRISM][0] and fastrp not in times.per_mode[HIPPORAG][0]

    medians = times.medians()
    table = pq.table(medians, ["naive", *WALKED])
    assert "| - PPR over entities and passages | - |" in table
    ratio_row = table.splitlines()[-1]
    assert ratio_row.startswith("| whole query / naive's | 1.00x |")


async def test_the_paired_run_asks_every_question_of_every_mode_on_both_indexes(tmp_path):
    """--versus-own: one process, both indexes, each question to each (mode, index); the ratios are of the medians."""
    pq = _profiler()
    rags = {"pooled": await make_rag(tmp_path / "pooled"), "own": await make_rag(tmp_path / "own")}
    times = pq.StageTimes()
    try:
        with times.installed():
            await pq.profile_versus_own(rags, _toy_dataset(), ["naive", "prism"], 2, times)
    finally:
        for rag in rags.values():
            await rag.finalize_storages()
    assert {key: len(queries) for key, queries in times.per_mode.items()} == {
        "naive pooled": 2, "prism pooled": 2, "naive own": 2, "prism own": 2}
    assert all(pq.RETRIEVER in stages for stages in times.per_mode["prism own"])
    medians = times.medians()
    whole = {key: stages["whole query"] for key, stages in medians.items()}
    got = pq.ratios(medians, ["naive", "prism"], ["pooled", "own"])
    assert got == {"prism/naive pooled": round(whole["prism pooled"] / whole["naive pooled"], 3),
                   "prism/naive own": round(whole["prism own"] / whole["naive own"], 3),
                   "naive pooled/own": round(whole["naive pooled"] / whole["naive own"], 3),
                   "prism pooled/own": round(whole["prism pooled"] / whole["prism own"], 3)}


async def test_unpinned_variant_runs_without_the_pinned_tokens_and_puts_them_back(tmp_path, monkeypatch):
    """--unpinned: ``prism~unpinned`` is prism with the tokenizer's pinned segments set aside for its queries only."""
    pq = _profiler()
    rag = await make_rag(tmp_path)
    seen = []
    original = pq._rank_with_mode

    async def recording(rag, mode, *args):
        seen.append((mode, bool(rag.tokenizer._pinned)))
        return await original(rag, mode, *args)

    monkeypatch.setattr(pq, "_rank_with_mode", recording)
    times = pq.StageTimes()
    try:
        await pq.profile(rag, _toy_dataset(), ["prism", "prism~unpinned"], 2, times)
        pinned = rag.tokenizer._pinned
    finally:
        await rag.finalize_storages()
    assert pinned  # the graph's descriptions were pinned when the views were prepared
    timed = seen[-4:]  # after the warm-up, each question to each variant
    assert sorted(timed) == [("prism", False), ("prism", False), ("prism", True), ("prism", True)]
    assert {key: len(queries) for key, queries in times.per_mode.items()} == {"prism": 2, "prism~unpinned": 2}


async def test_fastrp_inline_variant_scores_fastrp_on_the_querys_thread_with_the_same_nodes(tmp_path, monkeypatch):
    """--fastrp-inline: ``prism~fastrp-inline`` is prism with FastRP scored on the query's own thread; the nodes
    FastRP finds are those of ``prism``, whose FastRP runs on its own thread."""
    from lightrag_prism.retrievers.prism import expand

    pq = _profiler()
    beside = expand.start_fastrp
    rag = await make_rag(tmp_path)
    question_now, threads, fastrp_found = [None], [], []
    original_rank, original_fuse = pq._rank_with_mode, expand.fuse_ranked

    async def recording(rag, mode, question, *args):
        question_now[0] = question
        return await original_rank(rag, mode, question, *args)

    def fuse(perspectives, method):
        if "fastrp" in perspectives:
            path = "beside" if expand.start_fastrp is beside else "inline"
            fastrp_found.append((path, question_now[0], perspectives["fastrp"][0]))
        return original_fuse(perspectives, method)

    fastrp_top = expand.fastrp_top

    def scored_on(cache, *args):  # the beside path's scoring, recorded with its thread
        threads.append(threading.current_thread().name)
        return fastrp_top(cache, *args)

    monkeypatch.setattr(pq, "_rank_with_mode", recording)
    monkeypatch.setattr(expand, "fuse_ranked", fuse)
    monkeypatch.setattr(expand, "fastrp_top", scored_on)
    times = pq.StageTimes()
    try:
        with pq.fastrp_inline():
            assert expand.start_fastrp is not beside
        assert expand.start_fastrp is beside  # put back
        await pq.profile(rag, _toy_dataset(), ["prism", "prism~fastrp-inline"], 2, times)
    finally:
        await rag.finalize_storages()
    # prism's own queries (and the warm-up's) went through FastRP's thread, the inline variant's never did
    assert threads and all(name.startswith("prism-fastrp") for name in threads)
    assert len(threads) == sum(1 for path, _, _ in fastrp_found if path == "beside")
    beside_found = {q: nodes for path, q, nodes in fastrp_found if path == "beside"}
    inline_found = {q: nodes for path, q, nodes in fastrp_found if path == "inline"}
    assert len(inline_found) == 2 and all(inline_found.values())
    assert inline_found == {q: beside_found[q] for q in inline_found}
    assert {key: len(queries) for key, queries in times.per_mode.items()} == {"prism": 2, "prism~fastrp-inline": 2}


async def test_fine_parts_fall_inside_their_stages_and_the_rest_is_what_they_leave(tmp_path):
    """--fine: the retriever's parts are timed inside it, the PPR's weights and solve inside the PPR; the rest of
    the retriever is the retriever minus its parts on the query's path; the table puts parts under their stage."""
    from lightrag_prism.retrievers.views.passage_rank import PassageGraph

    pq = _profiler()
    original_weighted = PassageGraph.weighted
    rag = await make_rag(tmp_path)
    times = pq.StageTimes(fine=True)
    await _profile_all_modes(pq, rag, times, lambda: PassageGraph.weighted is not original_weighted)
    assert PassageGraph.weighted is original_weighted

    parts = [label for label, _, _ in pq.FINE_STAGES if not label.startswith("    ")]
    for stages in times.per_mode[PRISM]:
        for label in ("  linking (facts and names)", "  dense passage scores", "    per-query weights",
                      "    CG solve", "  top nodes", "  fusion", "  seed and fact items", "  ranked chunks"):
            assert stages[label] > 0, label
        assert stages[pq.PPR] >= stages["    per-query weights"] + stages["    CG solve"]
        on_path = sum(stages.get(label, 0.0) for label in parts + ["  fact scan", "  multi-hop", pq.PPR,
                                                                   "  expanded items"])
        assert stages[pq.RETRIEVER_REST] == pytest.approx(stages[pq.RETRIEVER] - on_path)
        assert stages[pq.RETRIEVER_REST] >= 0
    for stages in times.per_mode[HIPPORAG]:  # its PPR solves through the same CG
        assert stages[pq.PPR] >= stages["    CG solve"] > 0 and "    per-query weights" not in stages
    assert all(pq.RETRIEVER_REST not in stages for stages in times.per_mode["naive"])

    p95 = times.p95()
    for mode, queries in times.per_mode.items():  # two queries: 95% of the way from the faster to the slower
        fast, slow = sorted(1000 * q["whole query"] for q in queries)
        assert p95[mode] == pytest.approx(fast + 0.95 * (slow - fast), abs=0.01)
    rows = [row.split(" | ")[0] for row in pq.table(times.medians(), ["naive", PRISM], times.stages).splitlines()]
    ppr = rows.index("| - PPR over entities and passages")
    assert rows[ppr + 1:ppr + 3] == ["| - - per-query weights", "| - - CG solve"]
    assert rows.index("| - rest of the retriever") == rows.index("| tokenizer (LightRAG's counts)") - 1


async def test_fine_parts_leave_out_the_fastrp_threads_own_calls():
    """The top nodes FastRP's thread takes are FastRP's time, not a part of the query's path."""
    pq = _profiler()
    times = pq.StageTimes(fine=True)
    times.start()
    timed = times.timed("  top nodes", lambda: sum(range(20000)))
    worker = threading.Thread(target=timed, name="prism-fastrp_0")
    worker.start()
    worker.join()
    assert "  top nodes" not in times.current
    timed()
    assert times.current["  top nodes"] > 0
