"""Shared pytest fixtures: the scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripted_server import ScriptedServer


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A fresh :class:`ScriptedServer` on 127.0.0.1 (random port), stopped at teardown."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()
