"""The only code that touches LightRAG private symbols (filled in by the foundation work)."""
