import ast
from pathlib import Path

import lightrag_prism.graph as graph_package

ALLOWED_TOP_LEVEL = {"__future__", "dataclasses", "functools", "hashlib", "math", "typing", "collections",
                     "numpy", "scipy", "warnings"}


def test_package_exports():
    assert all(hasattr(graph_package, name) for name in graph_package.__all__)


def test_kernels_import_only_numpy_scipy_and_the_standard_library():
    """The kernels stay pure: no LightRAG, networkx, igraph or I/O imports (checked on the source)."""
    for path in Path(graph_package.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in ALLOWED_TOP_LEVEL, f"{path.name} imports {name}"
