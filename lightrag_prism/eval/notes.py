"""An everyday-notes benchmark: 40 Markdown and text files of a small fictional company (wiki pages, minutes, emails,
a team chat), written for this project, and 47 two-hop questions over them (``data/notes/``).

Each file is one passage, indexed as a user would index it: its text as it is (the passage's title is its first
line, so ``Passage.content`` is the file's text). Passage ids are the file names.
"""

from __future__ import annotations

import json

from .datasets import DATA_ROOT, Dataset, Passage, Question

NOTES_DIR = DATA_ROOT / "notes"


def load_notes() -> Dataset:
    passages = []
    for path in sorted((NOTES_DIR / "files").iterdir()):
        title, _, text = path.read_text(encoding="utf-8").strip().partition("\n")
        passages.append(Passage(path.name, title, text))
    rows = json.loads((NOTES_DIR / "questions.json").read_text(encoding="utf-8"))
    questions = [Question(id=row["id"], text=row["question"], gold_passage_ids=tuple(row["gold"]),
                          answer=row["answer"]) for row in rows]
    return Dataset("notes", passages, questions)
