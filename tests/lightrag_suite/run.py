"""LightRAG's own test suite, stock and with lightrag_prism's classes swapped in (the drop-in check).

    python tests/lightrag_suite/run.py            # downloads the sdist of the installed lightrag-hku from PyPI

The sdist's ``tests/`` run twice in a scratch copy of the sdist (its ``lightrag/`` package removed, so the installed
one is tested): as shipped, then with ``swap_classes.py`` as their ``conftest.py``. Exit status 1 when a test fails
swapped in that passes stock. Not collected by pytest (run by ``.ci/run``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fetch_sdist(into: Path) -> Path:
    wanted = f"lightrag-hku=={version('lightrag-hku')}"
    subprocess.run([sys.executable, "-m", "pip", "download", wanted, "--no-binary", ":all:", "--no-deps", "-q",
                    "-d", str(into)], check=True)
    archive = next(into.glob("lightrag_hku-*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    root = next(p for p in into.iterdir() if p.is_dir() and p.name.startswith("lightrag_hku-"))
    shutil.rmtree(root / "lightrag")  # test the installed package, not the sdist's copy
    return root


def run_suite(root: Path, label: str) -> tuple[set[str], int]:
    report = root / f"{label}.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
                    f"--junitxml={report}", "tests"], cwd=root, stdout=subprocess.DEVNULL)
    failed, total = set(), 0
    for case in ET.parse(report).iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(f"{case.get('classname')}::{case.get('name')}")
    return failed, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sdist-dir", help="an extracted sdist to use instead of downloading one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        if args.sdist_dir:
            root = Path(scratch) / "sdist"
            shutil.copytree(args.sdist_dir, root, ignore=shutil.ignore_patterns("lightrag"))
        else:
            root = fetch_sdist(Path(scratch))
        stock_failed, total = run_suite(root, "stock")
        shutil.copy(HERE / "swap_classes.py", root / "tests" / "conftest.py")
        swapped_failed, swapped_total = run_suite(root, "swapped")
    print(f"LightRAG {version('lightrag-hku')} suite: stock {total - len(stock_failed)} passed, "
          f"{len(stock_failed)} failed; lightrag_prism swapped in {swapped_total - len(swapped_failed)} passed, "
          f"{len(swapped_failed)} failed")
    for name in sorted(swapped_failed | stock_failed):
        where = ("stock and swapped" if name in stock_failed and name in swapped_failed
                 else "swapped only" if name in swapped_failed else "stock only")
        print(f"  failed ({where}): {name}")
    extra = swapped_failed - stock_failed
    return 1 if extra or swapped_total != total else 0


if __name__ == "__main__":
    sys.exit(main())
