"""Copy the per-feature sections in docs/ into README.md (between the MODE SECTIONS markers).

docs/<feature>.md is where each section is edited; run ``python docs/assemble_readme.py`` afterwards.
tests/test_readme_sections.py fails when README.md and docs/ disagree.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["offline-graph", "server", "storages", "prism", "hipporag", "fidelis", "llm-rerank-modes", "rerankers", "insert-features"]
BEGIN, END = "<!-- BEGIN MODE SECTIONS -->", "<!-- END MODE SECTIONS -->"
FOOTER = ("More detail on the insert building blocks (chunker internals, timestamp sort keys, the merge journal): "
          "[docs/insert.md](docs/insert.md). How the package is laid out (layers, the life of a query and of an "
          "insert, where a new mode goes): [docs/architecture.md](docs/architecture.md).")


def sections_text() -> str:
    parts = [f"<!-- from docs/{name}.md -->\n" + (ROOT / "docs" / f"{name}.md").read_text().strip()
             for name in SECTIONS]
    return "\n\n".join(parts + [FOOTER])


def main() -> None:
    readme = (ROOT / "README.md").read_text()
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    (ROOT / "README.md").write_text(head + BEGIN + "\n\n" + sections_text() + "\n\n" + END + tail)


if __name__ == "__main__":
    main()
