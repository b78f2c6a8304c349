"""A test-only chunks mode: returns the dense results and echoes the parameters it received."""

from lightrag_prism.result import Retrieval, ScoredItem

KIND = "chunks"


async def retrieve(ctx) -> Retrieval:
    chunks = await ctx.stock_search()
    retrieval = Retrieval(metadata={"seen": {"linking_top_k": ctx.param.linking_top_k,
                                             "topic_entities": ctx.param.topic_entities,
                                             "only_need_context": ctx.param.only_need_context}})
    retrieval.chunks = [ScoredItem("chunk", c["chunk_id"], 1.0 / (i + 1), ("echo",), c) for i, c in enumerate(chunks)]
    return retrieval
