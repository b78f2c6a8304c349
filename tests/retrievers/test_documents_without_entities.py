"""Documents the graph has little to say about index without error, and prism and hipporag rank them by the BM25 +
dense fusion, saying so (issue 67, "Bad input"): code only, a table only, another language, a heading-only file,
an empty section, a 50,000-character line."""

import uuid

import pytest
from lightrag.base import DocStatus

from lightrag_prism import PrismRAG, QueryParam
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

pytestmark = pytest.mark.asyncio

DOCUMENTS = [
    "def connect(host, port):\n    return socket.create_connection((host, port), timeout=5)\n",
    "<table><tr><th>param</th><th>default</th></tr><tr><td>work_mem</td><td>4MB</td></tr></table>",
    "La estación de Valdemora abre a las seis. El tren de las siete va a Soria.",
    "# Heading only",
    "## Empty section\n\n## Next section\n\nThe ferry leaves at noon from Kessa quay.",
    ("lorem ipsum " * 4200).strip(),  # one 50,000-character line
]


async def test_documents_without_entities_index_and_rank_by_the_fusion(tmp_path):
    rag = PrismRAG(working_dir=str(tmp_path), workspace=f"t_{uuid.uuid4().hex[:10]}",
                   embedding_func=hash_embedding_func(), tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    try:
        await rag.ainsert(DOCUMENTS, file_paths=[f"doc{i}.txt" for i in range(len(DOCUMENTS))])
        statuses = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
        assert sorted(s.file_path for s in statuses.values()) == sorted(
            f"doc{i}.txt" for i in range(len(DOCUMENTS)))  # nothing lost
        for mode in ("prism", "hipporag"):
            result = await rag.aquery_data("When does the train to Soria leave Valdemora?",
                                           QueryParam(mode=mode, chunk_top_k=5))
            steps = {f["step"]: f["reason"] for f in result["metadata"]["prism"]["fallbacks"]}
            assert "thin graph" in steps["thin_graph"], (mode, steps)
            chunks = result["data"]["chunks"]
            assert chunks and chunks[0]["content"] == DOCUMENTS[2], (mode, [c["content"][:30] for c in chunks])
            assert chunks[0]["found_by"] == "dense+bm25"
    finally:
        await rag.finalize_storages()
