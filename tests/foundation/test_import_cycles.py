"""No module of the package imports, directly or through others, a module that imports it back.

Every import statement counts, wherever it is (module level, inside a function, under ``TYPE_CHECKING``): a cycle
hidden in a function still ties the two modules together. Imports are read with ``ast``, nothing is executed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"lightrag_prism": ROOT / "lightrag_prism", "lightrag_prism.patches": ROOT / "patches"}


def package_modules() -> dict[str, Path]:
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if "static" in path.parts:
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            if package == "lightrag_prism" and name.startswith("lightrag_prism.patches"):
                continue
            modules[name] = path
    return modules


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports: ``from a import b`` is module ``a.b`` when that is a module (a
    submodule import), else ``a`` (a name defined in ``a``)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            found.update(f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names)
    return {name for name in found if name in modules and name != module}


def import_graph() -> nx.DiGraph:
    modules = package_modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        graph.add_edges_from((module, target) for target in imported_modules(module, path, modules))
    return graph


def test_the_walker_sees_real_imports():
    graph = import_graph()
    assert graph.has_edge("lightrag_prism.rag", "lightrag_prism.snapshot")  # from .snapshot import ...
    assert graph.has_edge("lightrag_prism.rag", "lightrag_prism.patches")  # from . import patches
    assert len(graph) > 80 and graph.number_of_edges() > 200


def test_no_import_cycles():
    graph = import_graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
