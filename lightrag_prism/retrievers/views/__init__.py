"""What the modes read, derived from a graph snapshot and shared by them (a mode never imports another):

* ``passage_graph.py``: HippoRAG's entity + passage graph view (``HippoGraph``), synonyms, passage vectors;
* ``facts.py``: one fact per relation and its vectors; ``index.py``: the name and fact embedding indexes;
* ``lexical.py``: BM25 over the passages (the lexical channel); ``fastrp.py``: FastRP embeddings of the graph;
* ``passage_rank.py``: seeds, the passage graph's PPR on snapshot arrays; ``ranking.py``: ranking steps shared by
  ``hipporag`` and ``prism`` (seed weights, dense head, the thin-graph fallback);
* ``query_state.py``: all of them prepared at insert time and kept up to date after every change.
"""
