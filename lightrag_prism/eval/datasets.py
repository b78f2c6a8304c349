"""Loaders for the bundled benchmark data (see ``lightrag_prism/data/README.md``). No LightRAG import.

Passage identity follows HippoRAG 2: the passage string is ``title + "\\n" + text`` and its id is
``"chunk-" + md5(passage string)`` (``compute_mdhash_id(content, prefix="chunk-")``; see
:func:`passage_id`). MuSiQue titles are not unique (1,764 titles for 1,890 passages), so gold is
always matched on the full passage string, never on the title.

* :func:`load_musique` → :class:`Dataset` with 1,890 passages, 100 questions (20 candidate
  paragraphs each, gold = ``is_supporting`` paragraphs, a missing flag counting as supporting like
  HippoRAG 2) and per-passage :class:`OpenIE` (triples that are not exactly three non-empty
  strings are dropped and counted in ``Dataset.invalid_triples``, as HippoRAG 2's
  ``filter_invalid_triples`` does).
* :func:`load_hotpotqa` → :class:`Dataset` with 994 passages (text = ``"".join(sentences)``; the
  sentences keep their leading spaces) and 100 questions with 2 gold passages each (one per
  supporting title).
* :func:`load_2wiki_corpus` → the 6,119 passages of HippoRAG's 2WikiMultihopQA corpus (no questions; the
  insert benchmark's corpus).
* :func:`load_cr_lt_kgqa` → list of :class:`KGQuestion` from the RoG-format Wikidata cache.

``root`` is the data folder holding the dataset directories (default: the copy shipped in the
package) or a dataset directory itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATA_ROOT = Path(__file__).resolve().parent.parent / "data"

MUSIQUE_DIR = "musique_train_100"
MUSIQUE_QUESTIONS = "musique_train.json"
MUSIQUE_CORPUS = "musique_train_corpus.json"
MUSIQUE_OPENIE = "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
HOTPOTQA_DIR = "hotpotqa_train_100"
HOTPOTQA_QUESTIONS = "hotpotqa_train.json"
HOTPOTQA_CORPUS = "hotpotqa_train_corpus.json"
TWOWIKI_DIR = "2wikimultihopqa_corpus"
TWOWIKI_CORPUS = "2wikimultihopqa_corpus.json"
CR_LT_DIR = "cr_lt_kgqa"
CR_LT_CACHE = "CR-LT-QA-Wikidata-Cache.jsonl"

Triple = tuple[str, str, str]


def passage_string(title: str, text: str) -> str:
    """HippoRAG's passage string: ``title + "\\n" + text``."""
    return f"{title}\n{text}"


def passage_id(title: str, text: str) -> str:
    """Stable passage id ``"chunk-" + md5(title + "\\n" + text)`` (HippoRAG 2's ``compute_mdhash_id``)."""
    return "chunk-" + hashlib.md5(passage_string(title, text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Passage:
    """A corpus passage; ``id`` is :func:`passage_id` of ``title`` and ``text``."""

    id: str
    title: str
    text: str

    @classmethod
    def from_title_text(cls, title: str, text: str) -> "Passage":
        """Build a passage, deriving its id."""
        return cls(passage_id(title, text), title, text)

    @property
    def content(self) -> str:
        """The passage string ``title + "\\n" + text`` (what HippoRAG indexes and matches)."""
        return passage_string(self.title, self.text)


@dataclass(frozen=True)
class Question:
    """A question with its gold passage ids and the ids of its candidate paragraphs.

    ``passage_ids`` are the paragraphs shipped with the question (MuSiQue 20, HotpotQA 10),
    in their original order; ``metadata`` keeps dataset-specific fields (hop type, decomposition…).
    """

    id: str
    text: str
    gold_passage_ids: tuple[str, ...]
    answer: str
    answer_aliases: tuple[str, ...] = ()
    passage_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class OpenIE:
    """Precomputed OpenIE of one passage: valid triples only, ``n_invalid`` dropped ones."""

    entities: list[str]
    triples: list[Triple]
    n_invalid: int = 0


@dataclass
class Dataset:
    """Passages, questions and (MuSiQue only) per-passage OpenIE keyed by passage id."""

    name: str
    passages: list[Passage]
    questions: list[Question]
    openie: dict[str, OpenIE] | None = None
    invalid_triples: int = 0

    @property
    def passage_by_id(self) -> dict[str, Passage]:
        """``{passage.id: passage}``."""
        return {p.id: p for p in self.passages}

    def subset(self, n_questions: int) -> "Dataset":
        """The first ``n_questions`` questions and the union of their candidate paragraphs (every passage when the
        questions name no candidates).

        Passages keep corpus order; OpenIE is restricted to them and ``invalid_triples``
        recounted over them.
        """
        if n_questions < 0:
            raise ValueError(f"n_questions must be >= 0, got {n_questions}")
        questions = self.questions[:n_questions]
        keep = {pid for q in questions for pid in q.passage_ids}
        if not keep:  # questions over the whole corpus (no candidate paragraphs): every passage stays
            return dataclasses.replace(self, questions=questions)
        passages = [p for p in self.passages if p.id in keep]
        openie = None if self.openie is None else {pid: self.openie[pid] for pid in keep if pid in self.openie}
        invalid = sum(o.n_invalid for o in openie.values()) if openie else 0
        return dataclasses.replace(self, passages=passages, questions=questions, openie=openie, invalid_triples=invalid)


@dataclass(frozen=True)
class KGQuestion:
    """A CR-LT-KGQA row in RoG format: question, topic/answer entities and its Wikidata triples."""

    id: str
    question: str
    q_entity: list[str]
    a_entity: list[str]
    graph: list[Triple]
    hop: int | None = None
    inference_rule: str = ""
    reasoning_steps: list[Any] = field(default_factory=list, compare=False)


def _dataset_dir(root: str | Path | None, name: str) -> Path:
    base = Path(root) if root is not None else DATA_ROOT
    return base / name if (base / name).is_dir() else base


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def is_valid_triple(triple: Any) -> bool:
    """True for a list/tuple of exactly three non-empty (after strip) strings."""
    return (
        isinstance(triple, (list, tuple))
        and len(triple) == 3
        and all(isinstance(x, str) and x.strip() for x in triple)
    )


def _musique_question(row: dict) -> Question:
    paragraphs = row["paragraphs"]
    ids = [passage_id(p["title"], p["paragraph_text"]) for p in paragraphs]
    gold = [pid for pid, p in zip(ids, paragraphs) if p.get("is_supporting", True)]
    meta = {
        "hop_type": row["id"].split("__", 1)[0],
        "question_decomposition": row.get("question_decomposition", []),
        "answerable": row.get("answerable", True),
    }
    return Question(
        id=row["id"],
        text=row["question"],
        gold_passage_ids=_unique(gold),
        answer=str(row["answer"]),
        answer_aliases=tuple(row.get("answer_aliases", [])),
        passage_ids=tuple(ids),
        metadata=meta,
    )


def _parse_openie(docs: list[dict]) -> tuple[dict[str, OpenIE], int]:
    """``{passage id: OpenIE}`` from HippoRAG OpenIE docs, and the number of dropped triples."""
    result: dict[str, OpenIE] = {}
    dropped_total = 0
    for doc in docs:
        pid = passage_id(doc["title"], doc["text"])
        raw = doc.get("extracted_triples", [])
        triples = [tuple(t) for t in raw if is_valid_triple(t)]
        dropped = len(raw) - len(triples)
        dropped_total += dropped
        entities = [e for e in doc.get("extracted_entities", []) if isinstance(e, str) and e.strip()]
        result[pid] = OpenIE(entities=entities, triples=triples, n_invalid=dropped)
    return result, dropped_total


def _warn_missing(name: str, questions: list[Question], passages: list[Passage]) -> None:
    known = {p.id for p in passages}
    missing = {pid for q in questions for pid in q.passage_ids if pid not in known}
    if missing:
        logger.warning("%s: %d question paragraphs are not in the corpus", name, len(missing))


def load_musique(root: str | Path | None = None, with_openie: bool = True) -> Dataset:
    """Load ``musique_train_100``: 1,890 passages, 100 questions, OpenIE (unless ``with_openie=False``)."""
    folder = _dataset_dir(root, MUSIQUE_DIR)
    passages = [Passage.from_title_text(r["title"], r["text"]) for r in _read_json(folder / MUSIQUE_CORPUS)]
    questions = [_musique_question(r) for r in _read_json(folder / MUSIQUE_QUESTIONS)]
    _warn_missing("musique", questions, passages)
    openie, invalid = None, 0
    if with_openie:
        openie, invalid = _parse_openie(_read_json(folder / MUSIQUE_OPENIE)["docs"])
        logger.info("musique: dropped %d invalid OpenIE triples", invalid)
    return Dataset("musique", passages, questions, openie, invalid)


def _hotpotqa_question(row: dict, corpus: dict[str, list[str]]) -> Question:
    gold_titles = _unique([title for title, _ in row["supporting_facts"]])
    gold = [passage_id(t, "".join(corpus[t])) for t in gold_titles]
    ids = [passage_id(t, "".join(sents)) for t, sents in row["context"]]
    meta = {"level": row.get("level"), "type": row.get("type"), "supporting_facts": row["supporting_facts"]}
    return Question(
        id=row["_id"],
        text=row["question"],
        gold_passage_ids=tuple(gold),
        answer=str(row["answer"]),
        passage_ids=tuple(ids),
        metadata=meta,
    )


def load_hotpotqa(root: str | Path | None = None) -> Dataset:
    """Load ``hotpotqa_train_100``: 994 passages (``"".join(sentences)``), 100 questions, 2 gold each."""
    folder = _dataset_dir(root, HOTPOTQA_DIR)
    corpus: dict[str, list[str]] = _read_json(folder / HOTPOTQA_CORPUS)
    passages = [Passage.from_title_text(title, "".join(sents)) for title, sents in corpus.items()]
    questions = [_hotpotqa_question(r, corpus) for r in _read_json(folder / HOTPOTQA_QUESTIONS)]
    _warn_missing("hotpotqa", questions, passages)
    return Dataset("hotpotqa", passages, questions)


def load_2wiki_corpus(root: str | Path | None = None) -> list[Passage]:
    """The 6,119 passages of ``2wikimultihopqa_corpus`` in file order (duplicates kept once)."""
    rows = _read_json(_dataset_dir(root, TWOWIKI_DIR) / TWOWIKI_CORPUS)
    passages = {}
    for row in rows:
        passage = Passage.from_title_text(row["title"], row["text"])
        passages.setdefault(passage.id, passage)
    return list(passages.values())


def _kg_question(row: dict) -> KGQuestion:
    graph = [tuple(t) for t in row.get("graph", []) if is_valid_triple(t)]
    dropped = len(row.get("graph", [])) - len(graph)
    if dropped:
        logger.warning("cr_lt_kgqa %s: dropped %d invalid triples", row["id"], dropped)
    return KGQuestion(
        id=row["id"],
        question=row["question"],
        q_entity=list(row.get("q_entity", [])),
        a_entity=[str(a) for a in row.get("a_entity", [])],
        graph=graph,
        hop=row.get("hop"),
        inference_rule=row.get("inference_rule", ""),
        reasoning_steps=list(row.get("reasoning_steps", [])),
    )


def load_cr_lt_kgqa(root: str | Path | None = None) -> list[KGQuestion]:
    """Load the 196 RoG-format rows of ``CR-LT-QA-Wikidata-Cache.jsonl`` (7,491 triples)."""
    path = _dataset_dir(root, CR_LT_DIR) / CR_LT_CACHE
    with path.open(encoding="utf-8") as fh:
        return [_kg_question(json.loads(line)) for line in fh if line.strip()]
