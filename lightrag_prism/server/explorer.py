"""The explorer page at ``/prism``: a query box, the ranked passages with ``score`` and ``found_by``, the seeds
and multi-hop paths from ``metadata.prism``, and a drawing of the subgraph involved.

Routes (the API routes use LightRAG Server's own authentication: ``LIGHTRAG_API_KEY`` or a login token):

* ``GET /prism``: the page (``static/explorer.html``; its script and style are files of this package, nothing is
  loaded from another host);
* ``GET /prism/api/modes``: the valid modes, which ones are the plugin's, whether an LLM is configured, and this
  process's view of other processes' writes (``freshness``: reloads so far, their durations, a failing check;
  per journaled file, the flushes appended or written whole and the other processes' writes caught up with or
  read whole);
* ``POST /prism/api/query``: the ``/query/data`` request body plus ``answer`` (bool). Runs the query once and
  returns the answer (when asked and an LLM is configured) or a note, the data, the metadata and the evidence
  subgraph (``evidence.py``).

Every response of the server carries ``X-Prism-Worker: <pid>``, the process that answered (several workers or
replicas, ``docs/scale-out.md``).
"""

# no `from __future__ import annotations`: FastAPI must see the request model class defined in explorer_router

import os
from pathlib import Path
from typing import Any, Optional

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from .. import journal
from ..rag import NO_LLM_NOTE
from ..retrievers import registered_modes, valid_modes
from .evidence import evidence_graph, named_entities

STATIC_DIR = Path(__file__).parent / "static"
PAGE = "/prism"


def explorer_router(rag, request_model, auth) -> APIRouter:
    router = APIRouter(tags=["prism explorer"])

    class ExplorerRequest(request_model):
        answer: Optional[bool] = False

    @router.get(PAGE, include_in_schema=False)
    async def page():
        return FileResponse(STATIC_DIR / "explorer.html", media_type="text/html")

    @router.get(f"{PAGE}/api/modes", dependencies=[Depends(auth)])
    async def modes() -> dict[str, Any]:
        return {"modes": valid_modes(), "plugin_modes": registered_modes(), "llm_configured": rag.llm_configured,
                "freshness": {**rag.version_watcher.status(), "files": journal.status(rag.prism_seam.journaled)}}

    @router.post(f"{PAGE}/api/query", dependencies=[Depends(auth)])
    async def query(request: ExplorerRequest) -> dict[str, Any]:
        param = request.to_query_params(False)
        wants_answer = bool(request.answer) and rag.llm_configured and request.mode != "bypass"
        try:
            if wants_answer:
                result = await rag.aquery_llm(request.query, param=param)
            else:
                result = await rag.aquery_data(request.query, param=param)
        except Exception as exc:  # reported to the page as one line, like the stock routes' 500s
            raise HTTPException(status_code=500, detail=f"{type(exc).__name__}: {exc}") from exc
        data = result.get("data") or {}
        prism = (result.get("metadata") or {}).get("prism") or {}
        note = None
        if request.answer and not rag.llm_configured:
            note = NO_LLM_NOTE
        elif result.get("status") == "failure":
            note = result.get("message")
        return {
            "mode": request.mode, "status": result.get("status"), "note": note,
            "answer": (result.get("llm_response") or {}).get("content") if wants_answer else None,
            "data": {k: data.get(k) or [] for k in ("entities", "relationships", "chunks", "references")},
            "metadata": result.get("metadata") or {},
            "graph": evidence_graph(data, prism, await entity_sources(rag, named_entities(data, prism))),
        }

    return router


async def entity_sources(rag, names: list[str]) -> dict[str, str]:
    """``source_id`` of each named entity (modes that rank passages return facts and seeds, not entity rows)."""
    nodes = await rag.chunk_entity_relation_graph.get_nodes_batch(names) if names else {}
    return {name: node.get("source_id", "") for name, node in nodes.items() if node}


WORKER_HEADER = "X-Prism-Worker"


def add_explorer_routes(app, rag, args) -> None:
    """Called by ``integration.install`` on the app LightRAG Server's ``create_app`` built."""
    from lightrag.api.routers import query_routes
    from lightrag.api.utils_api import get_combined_auth_dependency

    auth = get_combined_auth_dependency(os.getenv("LIGHTRAG_API_KEY") or args.key)  # as create_app does
    app.include_router(explorer_router(rag, query_routes.QueryRequest, auth))
    app.mount(f"{PAGE}/static", StaticFiles(directory=STATIC_DIR), name="prism-static")

    @app.middleware("http")
    async def name_the_worker(request, call_next):
        # Which process answered, with several workers or replicas (docs/scale-out.md).
        response = await call_next(request)
        response.headers[WORKER_HEADER] = str(os.getpid())
        return response
