"""Page-level citations: where each chunk came from (file, pages, section, span) and answers whose ``[n]``
markers all resolve.

* ``layout.py`` (pure): page markers in a document's text, its Markdown section paths, chunk spans;
* ``store.py`` (pure): the citation as stored in a chunk's ``heading`` record, and read back;
* ``answer.py`` (pure): the filter that takes made-up ``[n]`` markers out of an answer, whole or streamed;
* ``attach.py``: the query-time step that puts them on a result (``PrismRAG.aquery_data``/``aquery_llm``).
"""
