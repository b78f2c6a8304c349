"""Timestamp prefixing: ``ainsert(..., timestamps=[...])`` marks every chunk and description of a document.

``markers.py`` holds the pure helpers (validation, ``[Time: ...]`` prefixes, chronological order, checks that a
summary kept every marker). The chunk prefix is added by ``insert/pipeline.py``; descriptions are merged with their
timestamps by ``insert/summaries.py`` and kept on rebuild by ``insert/merging/rebuild.py``.
"""
