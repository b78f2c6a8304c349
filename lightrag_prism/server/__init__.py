"""``lightrag-prism serve``: LightRAG Server (its FastAPI app, routes, WebUI and auth) running a PrismRAG.

    lightrag-prism serve --working-dir ./prism_storage --host 127.0.0.1 --port 9621 [LightRAG Server options]

Options and environment variables are LightRAG Server's (``lightrag-server --help``). The LLM and the embedder:

* LightRAG Server's own bindings when chosen explicitly (``--llm-binding``/``LLM_BINDING``,
  ``--embedding-binding``/``EMBEDDING_BINDING``, also from ``.env``);
* otherwise the plugin's: ``PRISM_LLM_MODEL`` + ``OPENAI_BASE_URL`` (``backends/openai_compat.py``) or no LLM
  (offline extraction; ``/query`` returns the retrieved context with a note), and the local MiniLM embedder
  (or ``PRISM_EMBEDDING_MODEL``).

What changes in the server is in ``integration.py`` (LightRAG Server's module globals, each version-checked); the
explorer page is ``explorer.py`` at ``/prism``.
"""

from __future__ import annotations

import os
import sys

from ..errors import extra_install_hint


def explicit_binding(argv: list[str], option: str, env: str) -> bool:
    """Whether the user set ``option`` on the command line or ``env`` in the environment."""
    return any(a == option or a.startswith(option + "=") for a in argv) or bool(os.environ.get(env))


def make_server_rag(use_server_llm: bool, embedding_func):
    """The factory that replaces ``LightRAG(...)`` inside LightRAG Server's ``create_app``; ``embedding_func``: the
    plugin's embedder, or None for LightRAG Server's own binding."""
    from .. import PrismRAG, llm_from_env
    from ..backends import EMBEDDING_BATCH

    def make(**kwargs):
        if not use_server_llm:
            kwargs.update(llm_model_func=llm_from_env(), llm_model_kwargs={}, role_llm_configs={})
            kwargs["llm_model_name"] = os.environ.get("PRISM_LLM_MODEL") or "offline"
        if embedding_func is not None:
            kwargs.update(embedding_func=embedding_func, embedding_batch_num=EMBEDDING_BATCH)
        return PrismRAG(answer_without_llm="context", **kwargs)

    return make


def describe_plugin_bindings(args, use_server_llm: bool, embedding_func) -> None:
    """LightRAG Server's options describe what the plugin really uses, and name bindings that import nothing to
    install: its default, Ollama, pip-installs the ``ollama`` package (``pipmaster``) at start, which needs the
    network. The startup log and splash screen then state the real model and dimension."""
    from ..backends.openai_compat import DEFAULT_BASE_URL

    if not use_server_llm:
        args.llm_binding = "openai"  # LightRAG's OpenAI client module: a core dependency, nothing to install
        args.llm_model = os.environ.get("PRISM_LLM_MODEL") or "none (offline extraction, context answers)"
        args.llm_binding_host = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    if embedding_func is not None:
        args.embedding_binding = "openai"  # validated by create_app; the factory itself is replaced (patches)
        args.embedding_model = getattr(embedding_func, "model_name", None) or "lightrag_prism"
        args.embedding_dim = embedding_func.embedding_dim
    print(f"lightrag_prism: LLM {args.llm_model if not use_server_llm else 'from LightRAG Server binding'}; "
          f"embedder {args.embedding_model}, {args.embedding_dim}-d", flush=True)


def files_under_working_dir(args, argv: list[str]) -> None:
    """The uploads folder and ``lightrag.log`` go under ``--working-dir`` unless the user placed them
    (``--input-dir``/``INPUT_DIR``, ``LOG_DIR``): LightRAG Server puts both in the current directory."""
    os.makedirs(args.working_dir, exist_ok=True)
    if not explicit_binding(argv, "--input-dir", "INPUT_DIR"):
        args.input_dir = os.path.abspath(os.path.join(args.working_dir, "inputs"))
    os.environ.setdefault("LOG_DIR", os.path.abspath(args.working_dir))  # read by its logging and gunicorn config


def report_plugin_bindings(args, use_server_llm: bool, embedding_func) -> None:
    """After ``create_app`` validated them: the bindings ``/health`` reports are the ones that run. The names set
    by :func:`describe_plugin_bindings` only pass LightRAG Server's check of known binding names."""
    from ..backends.openai_compat import DEFAULT_BASE_URL

    endpoint, remote = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL, "openai-compatible (lightrag_prism)"
    if not use_server_llm:
        model = os.environ.get("PRISM_LLM_MODEL")
        args.llm_binding = remote if model else "none (lightrag_prism offline)"
        args.llm_binding_host = endpoint if model else None
    if embedding_func is not None:
        at_endpoint = bool(os.environ.get("PRISM_EMBEDDING_MODEL"))
        args.embedding_binding = remote if at_endpoint else "local (lightrag_prism)"
        args.embedding_binding_host = endpoint if at_endpoint else None


def install_server(argv: list[str]):
    """Parse LightRAG Server's options from ``argv`` and install the plugin's server patches; returns the args."""
    sys.argv = ["lightrag-prism serve", *argv]  # LightRAG Server's parser reads sys.argv
    try:
        from lightrag.api import config

        args = config.initialize_config(force=True)
        from lightrag.api import lightrag_server  # noqa: F401  (FastAPI and the rest of the api extra)
    except ImportError as exc:
        raise ImportError(f"lightrag-prism serve needs the api extra ({exc.name or exc} is missing): "
                          f"{extra_install_hint('api')}") from None
    from ..backends import default_embedding_func
    from . import integration
    from .explorer import add_explorer_routes

    files_under_working_dir(args, argv)
    use_server_llm = explicit_binding(argv, "--llm-binding", "LLM_BINDING")
    embedding_func = None if explicit_binding(argv, "--embedding-binding", "EMBEDDING_BINDING") else \
        default_embedding_func()
    describe_plugin_bindings(args, use_server_llm, embedding_func)

    def add_routes(app, rag, app_args):
        report_plugin_bindings(app_args, use_server_llm, embedding_func)
        add_explorer_routes(app, rag, app_args)

    integration.install(make_server_rag(use_server_llm, embedding_func), add_routes, embedding_func)
    return args


def serve(argv: list[str]) -> int:
    """One process (uvicorn), or with ``--workers N`` (N > 1) LightRAG's gunicorn runner, as ``lightrag-gunicorn``
    runs it: the app is built once in the master and forked, the workers share LightRAG's locks and update flags
    (file storages) and see each other's writes through the graph version (``coordination.py``)."""
    args = install_server(argv)
    from ..quiet_logs import install as install_quiet_logs

    # LightRAG's parser defaults to 2 workers, which its uvicorn runner ignores: several only when asked for
    if explicit_binding(argv, "--workers", "WORKERS") and args.workers > 1:
        from lightrag.api import run_with_gunicorn

        print(f"lightrag-prism server on http://{args.host}:{args.port} with {args.workers} workers  "
              "(explorer: /prism, WebUI: /webui, API: /docs)", flush=True)
        run_with_gunicorn.main()  # builds the app through the patched create_app, then forks the workers
        return 0
    import uvicorn

    from lightrag.api import lightrag_server

    app = lightrag_server.create_app(args)
    lightrag_server.configure_logging()
    install_quiet_logs()  # LightRAG Server's dictConfig drops the filter set at import
    print(f"lightrag-prism server on http://{args.host}:{args.port}  (explorer: /prism, WebUI: /webui, API: /docs)",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_config=None,
                **({"ssl_certfile": args.ssl_certfile, "ssl_keyfile": args.ssl_keyfile} if args.ssl else {}))
    return 0
