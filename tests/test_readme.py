"""The README stays a page a newcomer reads in minutes, and it agrees with the rest of the repository: every docs
page is linked, every mode is in the modes table, every image and link resolves, every benchmark results file the
docs cite is there, and the test command is the one CI runs."""

import re
from pathlib import Path

from lightrag_prism.retrievers import valid_modes

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MAX_LINES = 300
TEST_COMMAND = "python -m pytest -q"
# a results file named in backticks: `benchmarks/results/pooled/x-results.md`, `bench_insert_avx2.json`, `x-*.json`
CITED_RESULTS = re.compile(
    r"`((?:benchmarks/results/)?[\w./*-]*(?:results|rankings|timeline|versus-own|bench_insert)[\w.*-]*\.(?:json|md))`")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= MAX_LINES


def test_every_docs_page_is_linked_and_every_mode_is_in_the_table():
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in README, page.name
    table = README.split("| mode |", 1)[1].split("\n\n", 1)[0]
    for mode in valid_modes():
        assert f"`{mode}`" in table, mode


def test_links_and_images_resolve():
    for source in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", source.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            assert (source.parent / target).exists(), f"{source.name}: {target}"


def test_every_results_file_the_docs_cite_is_in_the_repository():
    # benchmarks/results/ is git-ignored (benchmarks write there), so a results file is committed with ``git add -f``;
    # one that was not exists only on the machine that ran the benchmark, and CI's fresh clone finds it missing
    results = ROOT / "benchmarks" / "results"
    for source in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for cited in CITED_RESULTS.findall(source.read_text()):
            name = cited.removeprefix("benchmarks/results/")
            assert list(results.glob(name if "/" in name else f"**/{name}")), (source.name, cited)


def test_the_readme_test_command_is_what_ci_runs():
    """The README's one test command ends with the commands .ci/run runs, in the same order."""
    commands = [line for line in README.splitlines() if TEST_COMMAND in line]
    assert len(commands) == 1 and "pip install -e \".[local,api,documents,servers,dev]\"" in commands[0]
    tail = commands[0].split(" && ")[commands[0].split(" && ").index(TEST_COMMAND):]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-len(tail):] == tail
    assert 'pip install --quiet -e ".[local,api,documents,servers,dev]"' in ci
