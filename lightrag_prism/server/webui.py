"""LightRAG Server's WebUI offering every registered mode: its compiled JavaScript, rewritten as it is served.

The WebUI of lightrag-hku 1.5.7 is a compiled React app. Its query box parses a leading ``/<mode> `` itself and
refuses, before sending anything, a mode outside a list compiled into one asset
(``[`naive`,`local`,`global`,`hybrid`,`mix`,`bypass`]``); its settings panel lists the same six modes as
hard-coded options in another. :func:`serve_with_modes` serves copies of those two assets with the plugin's modes
added (the list extended; one option per mode after ``bypass``), from routes placed before the WebUI's own static
mount. The files on disk are untouched.

Version check: each rewrite needs its pattern exactly once in the build; a build without it (another LightRAG
version) is served as it is, with one warning saying the WebUI offers the stock modes only.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

logger = logging.getLogger(__name__)

STOCK_MODES = ("naive", "local", "global", "hybrid", "mix", "bypass")
PREFIX_LIST = re.compile(r"=\[" + ",".join(f"`{m}`" for m in STOCK_MODES) + r"\]")
# (0,K.jsx)(L,{value:`bypass`,children:e(`retrievePanel.querySettings.queryModeOptions.bypass`)})
SELECTOR_OPTION = re.compile(r"\(0,([\w$]+)\.jsx\)\(([\w$]+),\{value:`bypass`,children:[\w$]+\("
                             r"`retrievePanel\.querySettings\.queryModeOptions\.bypass`\)\}\)")
WEBUI_MOUNTS = ("webui", "workspace")  # LightRAG's admin WebUI and its workspace query page share the assets


def rewrite_asset(text: str, modes: list[str]) -> str | None:
    """``text`` with ``modes`` added to the prefix list and the mode selector; None when neither is in it."""
    extra = [m for m in modes if m not in STOCK_MODES]
    changed = text
    if len(PREFIX_LIST.findall(changed)) == 1:
        changed = PREFIX_LIST.sub(lambda _: "=[" + ",".join(f"`{m}`" for m in (*STOCK_MODES, *extra)) + "]",
                                  changed)
    options = SELECTOR_OPTION.findall(changed)
    if len(options) == 1:
        jsx, item = options[0]
        added = "".join(f",(0,{jsx}.jsx)({item},{{value:`{m}`,children:`{m}`}})" for m in extra)
        changed = SELECTOR_OPTION.sub(lambda match: match.group(0) + added, changed)
    return changed if changed != text else None


def rewritten_assets(assets_dir: Path, modes: list[str]) -> dict[str, bytes]:
    """File name -> rewritten content, for the WebUI's JavaScript assets that name the stock modes."""
    out = {}
    for path in sorted(assets_dir.glob("*.js")):
        text = path.read_text(encoding="utf-8")
        if "`bypass`" not in text:
            continue
        changed = rewrite_asset(text, modes)
        if changed is not None:
            out[path.name] = changed.encode("utf-8")
    return out


def serve_with_modes(app, modes: list[str]) -> list[str]:
    """Route the WebUI's mode-bearing assets to their rewritten copies; returns the paths routed."""
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    mounts = [r for r in app.router.routes if isinstance(r, Mount) and r.name in WEBUI_MOUNTS]
    if not mounts:
        return []
    directory = getattr(mounts[0].app, "directory", None)
    assets = rewritten_assets(Path(directory) / "assets", modes) if directory else {}
    if len(assets) < 2:  # the prefix list and the selector live in two assets of the 1.5.7 build
        logger.warning("LightRAG's WebUI build does not have the mode list this plugin extends: the WebUI offers "
                       "the stock modes only (the plugin's modes work through the API and the /prism page)")
    routed = []
    for name, content in assets.items():
        def serve(request, content=content):
            return Response(content, media_type="text/javascript", headers={"Cache-Control": "no-cache"})
        for mount in mounts:
            path = f"{mount.path}/assets/{name}"
            app.router.routes.insert(0, Route(path, serve, methods=["GET", "HEAD"]))
            routed.append(path)
    return routed
