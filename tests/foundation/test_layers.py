"""Every import of the package follows the layer table of docs/architecture.md: the test reads the table (layer,
where, may import), places every module by its longest matching path, and fails on an import its layer may not
make, on a mode importing another mode, and on a module the table does not place. Imports are read with ``ast``
(test_import_cycles.import_graph), nothing is executed."""

from __future__ import annotations

import re
from pathlib import Path

from tests.foundation.test_import_cycles import import_graph

ROOT = Path(__file__).resolve().parents[2]
MODES_LAYER = "modes"


def layer_table() -> list[tuple[str, list[str], set[str]]]:
    """(layer name, module prefixes, layers it may import) per row of the table."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Layers, bottom up", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    names = [row[0].strip("| ").split(":")[0] for row in rows]
    layers = []
    for name, row in zip(names, rows):
        prefixes = [module_prefix(path) for path in re.findall(r"`([^`]+?(?:/|\.py))`", row[1])]
        may = row[2].split("(")[0]  # a parenthesis explains, it lists nothing
        layers.append((name, [p for p in prefixes if p], {n for n in names if n in may}))
    return layers


def module_prefix(path: str) -> str | None:
    """``graph/`` -> ``lightrag_prism.graph``; ``patches/`` -> ``lightrag_prism.patches``; ``__init__.py`` -> the
    package itself; a file named inside another row's folder (``patches/private.py``) places nothing."""
    if path.startswith("patches/"):
        return "lightrag_prism.patches" if path == "patches/" else None
    parts = path.rstrip("/").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["lightrag_prism", *parts])


def place(module: str, layers) -> str | None:
    best = None
    for name, prefixes, _ in layers:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (name, len(prefix))
    return best[0] if best else None


def mode_of(module: str) -> str:
    return module.split(".")[2]  # lightrag_prism.retrievers.<mode>...


def test_the_table_places_every_module_and_every_import_is_allowed():
    layers = layer_table()
    assert [name for name, _, _ in layers][:2] == ["kernels", "shared pieces"] and len(layers) == 8
    allowed = {name: may for name, _, may in layers}
    graph = import_graph()
    unplaced = sorted(m for m in graph.nodes if place(m, layers) is None)
    assert not unplaced, f"modules docs/architecture.md's layer table does not place: {unplaced}"
    against = []
    for a, b in graph.edges:
        la, lb = place(a, layers), place(b, layers)
        if la == lb == MODES_LAYER and mode_of(a) != mode_of(b):
            against.append(f"{a} -> {b} (a mode imports another mode)")
        elif la != lb and lb not in allowed[la]:
            against.append(f"{a} ({la}) -> {b} ({lb})")
    assert not against, "imports the layer table does not allow:\n" + "\n".join(sorted(against))


def test_the_check_sees_an_import_against_the_layers():
    """The table read as the test reads it: a kernel importing a mode would be refused, a mode reading a view not."""
    layers = layer_table()
    allowed = {name: may for name, _, may in layers}
    kernel, view = place("lightrag_prism.graph.ppr", layers), place("lightrag_prism.retrievers.views.facts", layers)
    mode = place("lightrag_prism.retrievers.prism.mode", layers)
    assert (kernel, view, mode) == ("kernels", "retrieval views", MODES_LAYER)
    assert mode not in allowed[kernel] and view in allowed[mode] and MODES_LAYER not in allowed[view]
    assert place("lightrag_prism.patches.private", layers) == "private symbols"
    assert place("lightrag_prism.retrievers", layers) == "adapter"
