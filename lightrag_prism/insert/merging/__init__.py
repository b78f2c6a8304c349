"""Agentic entity merging: near-duplicate entities judged by the LLM and merged, crash-safe.

``agentic.py`` (``agentic_merge``, ``roll_forward``) finds candidates (exact top-k or ``ann.py``), asks the LLM,
clusters the accepted pairs (``union_find.py``) and runs each merge: planned and journalled in the merge log
(``log.py``) before ``apply.py`` touches the graph; ``rebuild.py`` applies the recorded aliases when LightRAG
rebuilds entities after a document is deleted. Its state is in the plugin's KV namespace (``plugin_state.py``).
"""
