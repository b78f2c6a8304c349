"""Backends for the examples: your OpenAI-compatible endpoint if configured, else a scripted local server.

Set ``PRISM_LLM_MODEL`` (+ ``OPENAI_BASE_URL``/``OPENAI_API_KEY``) and optionally ``PRISM_EMBEDDING_MODEL`` +
``PRISM_EMBEDDING_DIM`` to run the examples against a real model (see ``lightrag_prism.llm_from_env``). Without
them, each example starts the test suite's scripted OpenAI-compatible server on 127.0.0.1 (``tests/scripted_server.py``):
it answers LightRAG's extraction/summary/keyword prompts deterministically and the example-specific prompts with
the scripted replies the example passes in, so every example runs offline.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.scripted_server / tests.helpers

from lightrag_prism import embedding_from_env, llm_from_env  # noqa: E402


@contextlib.contextmanager
def example_backend(scripted_replies=(), working_dir: str | None = None):
    """Yield PrismRAG keyword arguments (llm, embedder, working_dir); ``scripted_replies``: (marker, reply)."""
    llm, embedder, server = llm_from_env(), embedding_from_env(), None
    if llm is None or embedder is None:
        from tests.helpers import make_embedding_func, make_llm_func
        from tests.scripted_server import ScriptedServer

        server = ScriptedServer().start()
        for marker, reply in scripted_replies:
            server.script(marker, reply)
        llm = llm or make_llm_func(server)
        embedder = embedder or make_embedding_func(server)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            yield {"working_dir": working_dir or tmp, "workspace": f"example_{uuid.uuid4().hex[:8]}",
                   "llm_model_func": llm, "embedding_func": embedder, "entity_extract_max_gleaning": 0}
        finally:
            if server is not None:
                server.stop()
