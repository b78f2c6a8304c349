"""Errors raised by lightrag_prism, and how an exception is described in one line."""

import re
from pathlib import Path
from typing import Iterator

# the source checkout the package runs from, when installed with ``pip install -e .`` (setup.py beside the package)
SOURCE_CHECKOUT = Path(__file__).resolve().parent.parent

LLM_SETUP_HINT = (
    "Configure an OpenAI-compatible endpoint, e.g.\n"
    "  export PRISM_LLM_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-...                     # OpenAI\n"
    "  export PRISM_LLM_MODEL=qwen2.5 OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=ollama  # Ollama\n"
    "  export PRISM_LLM_MODEL=<served-model> OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=x  # vLLM\n"
    "and build the instance with llm_model_func=lightrag_prism.llm_from_env(), or pass your own llm_model_func."
)


def extra_install_hint(extra: str) -> str:
    """The pip command that installs ``extra``: from PyPI, or, when the package runs from a source checkout (the
    README's quick start), from that checkout, where ``pip install 'lightrag-prism[...]'`` would fetch another
    copy."""
    if (SOURCE_CHECKOUT / "setup.py").is_file():
        return f"pip install -e '{SOURCE_CHECKOUT}[{extra}]'"
    return f"pip install 'lightrag-prism[{extra}]'"


class LLMNotConfiguredError(RuntimeError):
    """A step that has no offline fallback needed an LLM and none is configured."""

    def __init__(self, step: str):
        super().__init__(f"{step} needs an LLM, and no LLM is configured.\n{LLM_SETUP_HINT}")
        self.step = step


class LLMCallError(RuntimeError):
    """The LLM failed while answering a query (after LightRAG's retries): the endpoint and the cause are named.

    Raised by ``aquery``/``aquery_llm`` in the plugin's modes (and in stock modes with
    ``stock_mode_llm_fallbacks=True``) when the answer call fails; retrieval steps fall back instead, see
    ``metadata["prism"]["fallbacks"]``. With ``answer_without_llm="context"`` the retrieved context is returned
    instead, headed by a note naming the failure."""

    def __init__(self, step: str, endpoint: str, cause: str):
        super().__init__(f"{step}: the LLM at {endpoint} failed: {cause}. Check the endpoint, the model name and "
                         f"the API key (PRISM_LLM_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY).")
        self.step, self.endpoint, self.cause = step, endpoint, cause


class StorageUnavailableError(RuntimeError):
    """A query could not reach a server-backed storage (after the storage's own retries). Nothing is lost: the
    storage reconnects on its own once its server is back, and the next query works again."""

    def __init__(self, storage: str, namespace: str, cause: str):
        super().__init__(f"the {storage} storage ({namespace}) is unreachable: {cause}. The query failed; the "
                         f"storage reconnects by itself when its server is back (its retries: "
                         f"POSTGRES_CONNECTION_RETRIES, REDIS_RETRY_ATTEMPTS).")
        self.storage, self.namespace, self.cause = storage, namespace, cause


class EmbeddingDimensionError(ValueError):
    """An index opened with an embedding function whose vectors have another dimension than the stored ones."""

    def __init__(self, working_dir: str, stored: int, configured: int):
        super().__init__(f"the index in {working_dir} holds {stored}-dimensional vectors, but this instance's "
                         f"embedding function gives {configured}-dimensional ones: open it with the embedder it was "
                         f"built with (the CLI: the same PRISM_EMBEDDING_MODEL and PRISM_EMBEDDING_DIM, or neither "
                         f"for the local all-MiniLM-L6-v2), or index into a new working dir.")
        self.working_dir, self.stored, self.configured = working_dir, stored, configured


# nano-vectordb checks the stored vectors' dimension with a bare assert when LightRAG builds its vector storages
_NANO_DIM_MISMATCH = re.compile(r"Embedding dim mismatch, expected: (?P<configured>\d+), but loaded: (?P<stored>\d+)")


def embedding_dimension_error(exc: BaseException, working_dir: str) -> EmbeddingDimensionError | None:
    """``exc`` as an :class:`EmbeddingDimensionError` when it is nano-vectordb's dimension check, else None."""
    found = _NANO_DIM_MISMATCH.search(str(exc)) if isinstance(exc, AssertionError) else None
    return None if found is None else EmbeddingDimensionError(working_dir, int(found["stored"]),
                                                              int(found["configured"]))


def exception_chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc``, then what caused it, and so on (``__cause__``, else ``__context__``), each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def connection_refused(exc: BaseException) -> ConnectionRefusedError | None:
    """The ConnectionRefusedError under ``exc`` (an HTTP client wraps it in two or three layers), if any."""
    return next((link for link in exception_chain(exc) if isinstance(link, ConnectionRefusedError)), None)


def describe_error(exc: BaseException, detail: str = "") -> str:
    """``Type: first line of the message`` (at most 300 characters, no trailing period) plus ``detail``."""
    text = str(exc).strip()
    text = text.splitlines()[0][:300].rstrip(".") + detail if text else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
