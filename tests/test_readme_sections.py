"""README.md carries every per-feature section of docs/ verbatim (run docs/assemble_readme.py after editing)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_sections_match_docs():
    spec = importlib.util.spec_from_file_location("assemble_readme", ROOT / "docs" / "assemble_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    readme = (ROOT / "README.md").read_text()
    assert module.sections_text() in readme, "README.md is stale: run python docs/assemble_readme.py"
    for mode in ["prism", "hipporag", "fidelis", "ensemble", "tournament"]:
        assert f"`{mode}`" in readme
