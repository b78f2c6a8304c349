"""Counts and identities of the bundled datasets (lightrag_prism.eval.datasets)."""

import hashlib
import json

import pytest

from lightrag_prism.eval.datasets import (
    DATA_ROOT,
    Passage,
    is_valid_triple,
    load_cr_lt_kgqa,
    load_hotpotqa,
    load_musique,
    passage_id,
)


@pytest.fixture(scope="module")
def musique():
    return load_musique()


@pytest.fixture(scope="module")
def hotpotqa():
    return load_hotpotqa()


def test_passage_id_is_hipporag_compute_mdhash_id():
    expected = "chunk-" + hashlib.md5("Title\nSome text.".encode("utf-8")).hexdigest()
    assert passage_id("Title", "Some text.") == expected
    p = Passage.from_title_text("Title", "Some text.")
    assert p.id == expected and p.content == "Title\nSome text."


def test_is_valid_triple():
    assert is_valid_triple(["a", "b", "c"]) and is_valid_triple(("a", "b", "c"))
    assert not is_valid_triple(["a", "b"]) and not is_valid_triple(["a", "b", "c", "d"])
    assert not is_valid_triple(["a", " ", "c"]) and not is_valid_triple(["a", None, "c"])


def test_musique_counts(musique):
    assert len(musique.questions) == 100
    assert len(musique.passages) == 1890
    assert len({p.id for p in musique.passages}) == 1890
    assert len({p.title for p in musique.passages}) == 1764  # titles are not unique
    assert all(len(q.passage_ids) == 20 for q in musique.questions)


def test_musique_gold_in_corpus(musique):
    ids = set(musique.passage_by_id)
    gold = [pid for q in musique.questions for pid in q.gold_passage_ids]
    assert len(gold) == 237
    assert set(gold) <= ids
    assert all(set(q.gold_passage_ids) <= set(q.passage_ids) for q in musique.questions)
    assert all(pid in ids for q in musique.questions for pid in q.passage_ids)


def test_musique_first_question(musique):
    q = musique.questions[0]
    assert q.id == "2hop__150763_14904" and q.answer == "G. Stanley Hall"
    assert q.answer_aliases == ("Stanley Hall",) and q.metadata["hop_type"] == "2hop"
    gold_titles = {musique.passage_by_id[pid].title for pid in q.gold_passage_ids}
    assert len(gold_titles) == 2


def test_musique_openie(musique):
    assert set(musique.openie) == set(musique.passage_by_id)
    n_valid = sum(len(o.triples) for o in musique.openie.values())
    assert musique.invalid_triples == 185
    assert n_valid == 17419 - 185
    assert all(is_valid_triple(t) for o in musique.openie.values() for t in o.triples)
    assert sum(1 for o in musique.openie.values() if not o.triples and not o.n_invalid) == 2
    first = musique.openie[musique.passages[0].id]
    assert ("Journal of Mathematical Physics", "published by", "American Institute of Physics") in first.triples


def test_musique_subset(musique):
    small = musique.subset(3)
    assert [q.id for q in small.questions] == [q.id for q in musique.questions[:3]]
    union = {pid for q in musique.questions[:3] for pid in q.passage_ids}
    assert {p.id for p in small.passages} == union
    assert set(small.openie) == union
    assert small.invalid_triples == sum(musique.openie[pid].n_invalid for pid in union)
    assert len(musique.passages) == 1890  # original untouched
    with pytest.raises(ValueError):
        musique.subset(-1)


def test_musique_without_openie_and_dataset_dir_root():
    ds = load_musique(DATA_ROOT / "musique_train_100", with_openie=False)
    assert ds.openie is None and len(ds.passages) == 1890


def test_hotpotqa(hotpotqa):
    assert len(hotpotqa.questions) == 100
    assert len(hotpotqa.passages) == 994
    ids = set(hotpotqa.passage_by_id)
    assert all(len(q.gold_passage_ids) == 2 for q in hotpotqa.questions)
    assert all(set(q.gold_passage_ids) <= ids for q in hotpotqa.questions)
    assert all(set(q.passage_ids) <= ids for q in hotpotqa.questions)
    sub = hotpotqa.subset(2)
    assert sub.openie is None and len(sub.passages) == len({p for q in sub.questions for p in q.passage_ids})


def test_hotpotqa_gold_is_title_newline_joined_sentences(hotpotqa):
    with (DATA_ROOT / "hotpotqa_train_100" / "hotpotqa_train_corpus.json").open(encoding="utf-8") as fh:
        corpus = json.load(fh)
    q = hotpotqa.questions[0]
    assert q.text == "If Gallu is a demon Lilu is what?" and q.answer == "a spirit"
    expected = {passage_id(t, "".join(corpus[t])) for t in ("Alû", "Lilu (mythology)")}
    assert set(q.gold_passage_ids) == expected
    assert hotpotqa.passage_by_id[passage_id("Demon Dice", "".join(corpus["Demon Dice"]))].text.startswith("Demon Dice")


def test_cr_lt_kgqa():
    rows = load_cr_lt_kgqa()
    assert len(rows) == 196
    assert sum(len(r.graph) for r in rows) == 7491
    first = rows[0]
    assert first.id == "S1" and first.q_entity == ["Horsens", "Ikast"] and first.a_entity == ["True"]
    assert first.hop == 3 and all(len(t) == 3 for t in first.graph)
