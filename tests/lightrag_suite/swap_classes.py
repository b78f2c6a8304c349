"""conftest.py for LightRAG's own test suite: ``lightrag.LightRAG``/``QueryParam`` become lightrag_prism's classes.

Copied into the sdist's ``tests/`` by ``run.py``; test modules import ``LightRAG``/``QueryParam`` after it ran.
"""

import lightrag
import lightrag.lightrag

import lightrag_prism

for module in (lightrag, lightrag.lightrag):
    module.LightRAG = lightrag_prism.LightRAG
    module.QueryParam = lightrag_prism.QueryParam
