"""``server/webui.py``: the WebUI's compiled mode lists, extended with the plugin's modes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lightrag_prism.server import webui

MODES = ["naive", "local", "global", "hybrid", "mix", "bypass", "prism", "hipporag"]
PARSER = "function MY(e){var jY=[`naive`,`local`,`global`,`hybrid`,`mix`,`bypass`];return jY.includes(e)}"
SELECTOR = ("(0,K.jsx)(L,{value:`bypass`,children:e(`retrievePanel.querySettings.queryModeOptions.bypass`)})]")


def test_the_prefix_list_gets_the_plugin_modes_after_the_stock_ones():
    rewritten = webui.rewrite_asset(PARSER, MODES)
    assert "jY=[`naive`,`local`,`global`,`hybrid`,`mix`,`bypass`,`prism`,`hipporag`]" in rewritten


def test_the_selector_gets_one_option_per_plugin_mode_in_the_same_component():
    rewritten = webui.rewrite_asset(SELECTOR, MODES)
    assert rewritten == (SELECTOR[:-1] + ",(0,K.jsx)(L,{value:`prism`,children:`prism`})"
                         ",(0,K.jsx)(L,{value:`hipporag`,children:`hipporag`})]")


def test_an_asset_without_the_lists_or_with_them_twice_is_left_alone():
    assert webui.rewrite_asset("console.log(`bypass`)", MODES) is None
    assert webui.rewrite_asset(PARSER + PARSER, MODES) is None  # ambiguous: not this build


def test_lightrag_s_own_build_has_both_lists():
    spec = importlib.util.find_spec("lightrag.api")
    if spec is None:
        pytest.fail("the 'api' extra (LightRAG Server) is part of the dev install")
    assets = Path(spec.origin).parent / "webui" / "assets"
    rewritten = webui.rewritten_assets(assets, MODES)
    texts = [content.decode() for content in rewritten.values()]
    assert len(rewritten) == 2, sorted(rewritten)
    assert any("`bypass`,`prism`,`hipporag`]" in t for t in texts)
    assert any("{value:`hipporag`,children:`hipporag`}" in t for t in texts)
