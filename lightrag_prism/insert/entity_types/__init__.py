"""Adaptive entity type discovery: ``entity_type_aug`` asks the LLM for domain types found in sample windows.

``discovery.py`` (``discover_entity_types``) samples, asks, cleans and votes, then extends LightRAG's entity-type
guidance; the result is saved in the plugin state and restored by every new instance.
"""
