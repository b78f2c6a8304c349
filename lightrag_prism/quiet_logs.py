"""LightRAG warnings that say nothing to a user of this plugin, dropped (a logging filter on LightRAG's logger).

* "No entities with text chunks found" / "No relation-related chunks found": a plugin mode hands LightRAG its
  entities and relations without ``source_id`` on purpose (its own chunk order must not be reshuffled), so
  LightRAG's chunk merge finds none: expected, emitted on every ``prism`` query. Dropped only while a plugin mode
  runs (:data:`patches.ACTIVE_HOOKS` is set); a stock query still warns.
* "Rerank is enabled but no rerank model is configured": LightRAG's ``QueryParam`` enables rerank by default and
  warns on every query without a rerank model; it is said once per process.
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


def install() -> None:
    logger = logging.getLogger("lightrag")
    if not any(isinstance(f, QuietLightRAG) for f in logger.filters):
        logger.addFilter(QuietLightRAG())
