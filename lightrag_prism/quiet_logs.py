"""LightRAG warnings that say nothing to a user of this plugin, dropped (a logging filter on LightRAG's logger).

* "No entities with text chunks found" / "No relation-related chunks found": a plugin mode hands LightRAG its
  entities and relations without ``source_id`` on purpose (its own chunk order must not be reshuffled), so
  LightRAG's chunk merge finds none: expected, emitted on every ``prism`` query. Dropped only while a plugin mode
  runs (:data:`patches.ACTIVE_HOOKS` is set); a stock query still warns.
* "Rerank is enabled but no rerank model is configured": LightRAG's ``QueryParam`` enables rerank by default and
  warns on every query without a rerank model; it is said once per process.

And LightRAG's INFO logs (about 70 lines for two documents and one query) are off unless the application configured
logging before importing lightrag_prism (root handlers present) or set ``LOG_LEVEL``: :func:`quiet_by_default`
sets the ``lightrag`` logger to WARNING and undoes the ``logging.basicConfig(level=INFO)`` that nano-vectordb runs
at import. ``logging.getLogger("lightrag").setLevel(logging.INFO)`` brings them back.
"""

from __future__ import annotations

import logging

from .patches import ACTIVE_HOOKS

EXPECTED_IN_PLUGIN_MODES = ("No entities with text chunks found", "No relation-related chunks found")
ONCE = ("Rerank is enabled but no rerank model is configured",)


class QuietLightRAG(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if ACTIVE_HOOKS.get() is not None and message.startswith(EXPECTED_IN_PLUGIN_MODES):
            return False
        for prefix in ONCE:
            if message.startswith(prefix):
                if prefix in self.said:
                    return False
                self.said.add(prefix)
        return True


def quiet_by_default(root_configured_before_import: bool) -> None:
    import os

    if root_configured_before_import or os.environ.get("LOG_LEVEL"):
        return
    import nano_vectordb  # noqa: F401  (its import runs logging.basicConfig(level=INFO))

    logging.getLogger().setLevel(logging.WARNING)
    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.WARNING)


def install() -> None:
    logger = logging.getLogger("lightrag")
    if not any(isinstance(f, QuietLightRAG) for f in logger.filters):
        logger.addFilter(QuietLightRAG())
