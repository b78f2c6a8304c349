"""Timestamp prefixes for entity/relation descriptions (pure helpers).

Format: ``"[Time: {ts}] {description}"`` (``TIME_PREFIX_FORMAT``), e.g.
``"[Time: 2024-Q3] Apple reported iPhone revenue of $39.3B"``.  LightRAG joins the
description fragments of one entity with ``"<SEP>"``; these helpers split them,
order them chronologically before a summary, check that a summary kept every
``[Time: …]`` marker, and build a deterministic fallback when it did not.

Timestamps are compared with :func:`timestamp_sort_key`: ISO dates ``2024-03-01``
(optionally with a time), months ``2024-05``, quarters ``2024-Q3`` (also
``2024Q3``, ``Q3 2024``), halves ``2024-H1``, years ``2024`` (also ``FY2024``).  A
period sorts by its first day; on a tie the coarser period comes first (``2024``
< ``2024-H1`` < ``2024-Q1`` < ``2024-01`` < ``2024-01-01``); the same period spelt
two ways (``2024-Q1``, ``Q1 2024``) ties, so a stable sort keeps input order.
Anything else sorts after all recognised timestamps, in plain string order.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

logger = logging.getLogger(__name__)

TIME_PREFIX_FORMAT = "[Time: {ts}] {description}"
GRAPH_FIELD_SEP = "<SEP>"  # LightRAG's description separator (lightrag.constants.GRAPH_FIELD_SEP)

_PREFIX_RE = re.compile(r"^\s*(?:\[Time:\s*[^\]\n]*\]\s*)+")
_MARKER_RE = re.compile(r"\[Time:\s*([^\]\n]*?)\s*\]")
_LEADING_TS_RE = re.compile(r"^\s*\[Time:\s*([^\]\n]*?)\s*\]")

# (regex, granularity rank: coarser periods sort first on a tie, month of period start)
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?")
_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")
_QUARTER_RE = re.compile(r"^(?:(\d{4})\s*-?\s*Q([1-4])|Q([1-4])\s*-?\s*(\d{4}))$", re.I)
_HALF_RE = re.compile(r"^(?:(\d{4})\s*-?\s*H([12])|H([12])\s*-?\s*(\d{4}))$", re.I)
_YEAR_RE = re.compile(r"^(?:FY\s*)?(\d{4})$", re.I)

TIMESTAMP_SUMMARY_INSTRUCTION = """---Timestamps---
Some descriptions start with a time marker such as "[Time: 2024-Q3]".
- Keep every distinct time marker exactly as written (same brackets and text); never drop, merge or reword one.
- Put each fact next to the marker of the period it belongs to, in chronological order (oldest first).
- If two descriptions give different values for the same period, keep both and say they conflict.
- Facts without a marker are background: state them first, without inventing a time.
"""


def _check_ts(ts: object) -> str:
    if not isinstance(ts, str) or not ts.strip():
        raise ValueError(f"timestamp must be a non-empty string, got {ts!r}")
    if "]" in ts or "\n" in ts:
        raise ValueError(f"timestamp must not contain ']' or a newline, got {ts!r}")
    return ts.strip()


def prefix_description(description: str, ts: str) -> str:
    """Return ``"[Time: ts] description"``; idempotent.

    Any existing leading ``[Time: …]`` prefix (one or several stacked ones) is
    replaced by the single prefix for ``ts``: the timestamp passed in comes from
    the document metadata and is authoritative, so re-prefixing never doubles a
    prefix and a description re-extracted from a re-dated document is re-dated.
    An empty description stays empty (there is nothing to date).
    """
    ts = _check_ts(ts)
    body = _PREFIX_RE.sub("", description or "", count=1).strip()
    if not body:
        return ""
    existing = leading_timestamp(description)
    if existing is not None and existing != ts:
        logger.debug("replacing timestamp prefix %r with %r", existing, ts)
    return TIME_PREFIX_FORMAT.format(ts=ts, description=body)


def leading_timestamp(fragment: str) -> str | None:
    """The timestamp of a fragment's leading ``[Time: …]`` prefix, or None."""
    match = _LEADING_TS_RE.match(fragment or "")
    return match.group(1) if match and match.group(1) else None


def split_fragments(description: str, sep: str = GRAPH_FIELD_SEP) -> list[str]:
    """Split a stored description on ``sep``; fragments are stripped, empty ones dropped."""
    return [part.strip() for part in (description or "").split(sep) if part.strip()]


def timestamp_sort_key(ts: str) -> tuple:
    """Sort key for one timestamp (see the module docstring for the recognised forms)."""
    s = (ts or "").strip()
    m = _DATE_RE.match(s)
    if m:
        y, mo, d = int(m[1]), int(m[2]), int(m[3])
        clock = tuple(int(x or 0) for x in (m[4], m[5], m[6]))
        return (0, y, mo, d, 4 if m[4] else 3, clock)
    for regex, rank, months in ((_MONTH_RE, 2, None), (_QUARTER_RE, 1, 3), (_HALF_RE, 0.5, 6)):
        m = regex.match(s)
        if m:
            groups = [g for g in m.groups() if g]
            year = int(next(g for g in groups if len(g) == 4))
            n = int(next(g for g in groups if len(g) != 4))
            month = n if months is None else (n - 1) * months + 1
            if 1 <= month <= 12:
                return (0, year, month, 1, rank, ())
    m = _YEAR_RE.match(s)
    if m:
        return (0, int(m[1]), 1, 1, 0, ())
    return (1, s)


def order_fragments_chronologically(fragments: Sequence[str]) -> list[str]:
    """Stable chronological order by each fragment's leading ``[Time: …]`` prefix.

    Fragments without a leading timestamp are background facts: they come first,
    in their original relative order, followed by the dated fragments sorted by
    :func:`timestamp_sort_key` (equal timestamps keep their original order).
    """
    undated = [f for f in fragments if leading_timestamp(f) is None]
    dated = [f for f in fragments if leading_timestamp(f) is not None]
    dated.sort(key=lambda f: timestamp_sort_key(leading_timestamp(f) or ""))
    return undated + dated


def extract_timestamps(text: str) -> list[str]:
    """Distinct timestamps of every ``[Time: …]`` marker in ``text``, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _MARKER_RE.finditer(text or ""):
        if match.group(1):
            seen.setdefault(match.group(1), None)
    return list(seen)


def verify_timestamps_kept(original_fragments: Iterable[str], summary: str) -> list[str]:
    """Timestamps present in ``original_fragments`` but missing from ``summary`` (chronological)."""
    wanted = extract_timestamps("\n".join(original_fragments))
    kept = set(extract_timestamps(summary))
    missing = [ts for ts in wanted if ts not in kept]
    return sorted(missing, key=timestamp_sort_key)


def deterministic_concat(fragments: Sequence[str], sep: str = "\n") -> str:
    """Every distinct fragment, with its ``[Time: …]`` prefix, in chronological order.

    The fallback when an LLM summary dropped a timestamp: nothing is paraphrased,
    exact duplicates are kept once, and fragments are joined with ``sep`` (use
    ``GRAPH_FIELD_SEP`` to keep them as separate LightRAG fragments).
    """
    distinct = list(dict.fromkeys(f.strip() for f in fragments if f and f.strip()))
    return sep.join(order_fragments_chronologically(distinct))


def validate_timestamps(timestamps: object, n_docs: int) -> list[str]:
    """Check user-supplied timestamps for ``n_docs`` documents; return them stripped.

    Accepts a list/tuple of non-empty strings, one per document (a bare string only
    when there is exactly one document).  Raises ``ValueError`` naming the problem.
    """
    if isinstance(timestamps, str):
        if n_docs != 1:
            raise ValueError(f"got a single timestamp string for {n_docs} documents; pass a list of {n_docs}")
        timestamps = [timestamps]
    if not isinstance(timestamps, (list, tuple)):
        raise ValueError(f"timestamps must be a list of strings, got {type(timestamps).__name__}")
    if len(timestamps) != n_docs:
        raise ValueError(f"got {len(timestamps)} timestamps for {n_docs} documents; need exactly one per document")
    out = []
    for i, ts in enumerate(timestamps):
        try:
            out.append(_check_ts(ts))
        except ValueError as exc:
            raise ValueError(f"timestamps[{i}]: {exc}") from None
    return out
