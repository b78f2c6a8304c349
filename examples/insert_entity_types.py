"""Adaptive entity types: the LLM proposes domain-specific types (with explanations) from samples of your texts;
they extend LightRAG's base types in the extraction prompt and are reloaded by every later instance.

    python examples/insert_entity_types.py
"""

import json

from _backend import example_backend

from lightrag_prism import PrismRAG

DOCS = ["Apple Q3 2024 Earnings Call - iPhone revenue $39.3B, up 1.5% YoY; EPS $1.40; operating margin 31%.",
        "Microsoft Azure grew 29% to $25.4B with AI integration; EPS $3.30."]
OFFLINE_REPLY = json.dumps({"entity_types": [
    {"name": "FinancialMetric", "explanation": "A reported financial measure such as revenue, EPS or margin."},
    {"name": "FiscalPeriod", "explanation": "A reporting period such as Q3 2024 or FY2023."}]})


def main():
    with example_backend([("You are designing the entity types", OFFLINE_REPLY)]) as kwargs:
        import asyncio

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        rag = PrismRAG(**kwargs)
        loop.run_until_complete(rag.initialize_storages())
        result = rag.entity_type_aug(texts=DOCS)  # the sync form from the PrismRAG README
        print("added:", result["added_types"], "fallback:", result["fallback"])
        print("types now:", result["entity_types"])
        again = rag.entity_type_aug(texts=DOCS)
        print("second call: analysed", again["analysed"], "skipped", again["skipped"])
        loop.run_until_complete(rag.finalize_storages())
        reopened = PrismRAG(**kwargs)
        loop.run_until_complete(reopened.initialize_storages())  # the saved types are reloaded here
        print("new instance sees:", "FinancialMetric" in reopened.addon_params["entity_types_guidance"])
        loop.run_until_complete(reopened.finalize_storages())
        pending = asyncio.all_tasks(loop)  # LightRAG's LLM queue workers
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


if __name__ == "__main__":
    main()
