"""The ``fidelis`` mode: LLM-planned beam search over knowledge-graph paths with deductive termination (KIND = "kg").

Stages, in order:

1. plan (``prompts.py``, one LLM call): steps, keywords, a declarative statement (offline keywords without an LLM);
2. topic entities linked from the keywords;
3. beam search (``mode.py``): each step scores every relation of the beams' last nodes (``scoring.py``), the LLM
   picks the beams, a verifier stops the search once the paths entail the statement;
4. output (``output.py``): the paths' entities, relations and source chunks, scored, for LightRAG's context.

Knobs (``PrismQueryParam``): ``beam_width``, ``beam_top_n``, ``max_path_length``, ``topic_entities``.
"""

from .mode import KIND, OWN_CHUNK_RANKING, reads_keywords, retrieve

__all__ = ["KIND", "OWN_CHUNK_RANKING", "reads_keywords", "retrieve"]
