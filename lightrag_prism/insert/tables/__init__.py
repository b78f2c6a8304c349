"""Table-aware chunking: every HTML table stays whole in one chunk, with the text around it as context.

``chunker.py`` (``make_table_aware_chunker``, ``chunk_document``) cuts a document into text and table chunks;
``html.py`` finds and normalises the tables; ``split.py`` splits a table too large for one chunk by rows, header
repeated; ``token_budget.py`` fits context to the tokenizer's budget; ``prompt.py`` is the extraction prompt for
table chunks. Wired in by ``insert/pipeline.py`` (``table_aware_chunking``).
"""
