"""patches/: the version and private-symbol checks, and the hooks' inertness for plain LightRAG."""

from __future__ import annotations

import pytest

from lightrag_prism import patches


def test_supported_version_passes():
    patches.check_lightrag()


@pytest.mark.parametrize("found", ["1.5.6", "1.6.0", "2.0.0"])
def test_unsupported_version_fails_with_one_clear_message(monkeypatch, found):
    monkeypatch.setattr(patches.private, "version", lambda name: found)
    with pytest.raises(patches.UnsupportedLightRAGVersion, match=r"supports lightrag-hku >=1\.5\.7,<1\.6; found"):
        patches.check_lightrag()


def test_missing_private_symbol_is_named(monkeypatch):
    monkeypatch.setattr(patches.private, "PRIVATE_SYMBOLS", [("lightrag.operate", "_no_such_stage", 1)])
    with pytest.raises(patches.UnsupportedLightRAGVersion, match="_no_such_stage is missing"):
        patches.check_lightrag()


def test_changed_arity_is_named(monkeypatch):
    monkeypatch.setattr(patches.private, "PRIVATE_SYMBOLS", [("lightrag.operate", "_perform_kg_search", 3)])
    with pytest.raises(patches.UnsupportedLightRAGVersion, match="takes 10 parameters, expected 3"):
        patches.check_lightrag()


def test_wrappers_are_installed_once_and_inert_without_hooks():
    from lightrag import operate

    wrapped = operate._perform_kg_search
    assert wrapped._lightrag_prism_wrapped
    patches.install()  # idempotent
    assert operate._perform_kg_search is wrapped
    assert patches.ACTIVE_HOOKS.get() is None
