"""lightrag_prism: a drop-in LightRAG plugin."""
