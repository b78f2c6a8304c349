"""lightrag_prism: a drop-in LightRAG plugin for multi-hop graph retrieval.

    from lightrag_prism import LightRAG, QueryParam   # PrismRAG and PrismQueryParam under the stock names
"""

import logging as _logging

_ROOT_LOGGING_CONFIGURED = bool(_logging.getLogger().handlers)  # by the application, before this import

from . import patches  # noqa: E402,F401  (checks the LightRAG version and installs the query hooks first)
from .backends import (
    OfflineTokenizer,
    embedding_from_env,
    llm_from_env,
    local_embedding_func,
    openai_compatible_embedding,
    openai_compatible_llm,
)
from .errors import EmbeddingDimensionError, LLMCallError, LLMNotConfiguredError, StorageUnavailableError
from .param import PrismQueryParam
from .quiet_logs import install as _install_quiet_logs
from .quiet_logs import quiet_by_default as _quiet_by_default
from .rag import PrismRAG
from .retrievers import registered_modes, valid_modes

LightRAG = PrismRAG
QueryParam = PrismQueryParam

__all__ = [
    "LightRAG", "QueryParam", "PrismRAG", "PrismQueryParam", "LLMCallError", "LLMNotConfiguredError",
    "StorageUnavailableError", "EmbeddingDimensionError",
    "OfflineTokenizer", "embedding_from_env", "llm_from_env", "local_embedding_func", "openai_compatible_embedding",
    "openai_compatible_llm", "registered_modes", "valid_modes",
]
__version__ = "0.3.0"

_install_quiet_logs()
_quiet_by_default(_ROOT_LOGGING_CONFIGURED)
