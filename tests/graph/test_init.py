import subprocess
import sys


def test_package_exports():
    import lightrag_prism.graph as g

    assert all(hasattr(g, name) for name in g.__all__)


def test_kernels_import_neither_lightrag_nor_networkx():
    code = ("import sys, lightrag_prism.graph; "
            "bad = [m for m in ('lightrag', 'networkx', 'igraph') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
