"""Citations end to end on real files: every chunk of every mode cites its file, pages, section and span, and the
pages it cites hold its text (checked by reading those pages again with pypdf)."""

from __future__ import annotations

import asyncio
import re

import pytest
from lightrag.base import DocStatus

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.citations.layout import PAGE_MARKER
from lightrag_prism.inputs import collect_documents, source_names
from lightrag_prism.retrievers import valid_modes
from tests.citations.corpus import make_corpus
from tests.helpers import dense_hash_embedding_func

QUESTION = "How often is valve V06-07 inspected, and which crew does it?"


def make_rag(folder, **overrides) -> PrismRAG:
    kwargs = dict(working_dir=str(folder), workspace=f"citations_{folder.name}",
                  embedding_func=dense_hash_embedding_func(64),
                  offline_extractor="regex", chunk_token_size=160, chunk_overlap_token_size=20)
    return PrismRAG(**{**kwargs, **overrides})


async def index(rag: PrismRAG, folder, **insert_options) -> dict[str, str]:
    collected = collect_documents([str(folder)])
    names = source_names([path for path, _ in collected.documents])
    await rag.ainsert([text for _, text in collected.documents], file_paths=names, **insert_options)
    return dict(zip(names, (text for _, text in collected.documents)))


async def stored_chunks(rag: PrismRAG) -> list[tuple[str, dict, dict]]:
    """(document content as stored, chunk record, its citation) of every chunk."""
    from lightrag_prism.citations.store import citation_of

    out = []
    docs = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
    for doc_id, status in docs.items():
        content = (await rag.full_docs.get_by_id(doc_id))["content"]
        for record in await rag.text_chunks.get_by_ids(status.chunks_list):
            out.append((content, record, citation_of(record, record["file_path"])))
    return out


def pdf_pages(path) -> list[str]:
    import pypdf

    return [" ".join((page.extract_text() or "").split()) for page in pypdf.PdfReader(str(path)).pages]


def plain(text: str) -> str:
    """Chunk text as words, its Markdown heading marks taken off."""
    return " ".join(re.sub(r"(?m)^#{1,6} ", "", text).split())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


def test_every_pdf_chunk_cites_pages_that_hold_its_text(corpus, tmp_path):
    async def run():
        rag = make_rag(tmp_path)
        await rag.initialize_storages()
        try:
            await index(rag, corpus["manual"].parent)
            return await stored_chunks(rag)
        finally:
            await rag.finalize_storages()

    chunks = asyncio.run(run())
    pages = pdf_pages(corpus["manual"])
    pdf = [(content, record, citation) for content, record, citation in chunks if citation["file"] == "manual.pdf"]
    assert len(pdf) >= 12
    held = [plain(record["content"]) in " ".join(pages[citation["pages"][0] - 1:citation["pages"][1]])
            for _, record, citation in pdf]
    assert all(held), f"{held.count(False)} of {len(held)} chunks cite pages without their text"
    assert any(c["pages"][0] < c["pages"][1] for _, _, c in pdf)  # some chunks cross a page boundary
    for content, record, citation in chunks:  # every chunk: its span in the document as stored is its text
        start, end = citation["span"]
        source = PAGE_MARKER.sub("", content[start:end])
        if "<table>" in source:  # a table chunk also carries context around the table its span cites
            assert source in record["content"]
        else:
            assert source == record["content"]
    sections = {c["section"] for _, _, c in pdf}
    assert "Chapter 2 Pumps of line 2 > Section 2.2 Valves of bay 6" in sections


def test_docx_and_markdown_chunks_cite_page_breaks_and_sections(corpus, tmp_path):
    async def run():
        rag = make_rag(tmp_path)
        await rag.initialize_storages()
        try:
            await index(rag, corpus["manual"].parent, split_by_character="\n\n")  # a paragraph per chunk
            return await stored_chunks(rag)
        finally:
            await rag.finalize_storages()

    cited = {}
    for _, record, citation in asyncio.run(run()):
        for phrase in ("led by Mara Quist", "yellow vest", "Olle Brandt", "dredged in 1902", "built in 1911",
                       "timber leave"):
            if phrase in record["content"] and "<table>" not in record["content"]:
                cited[phrase] = (citation["pages"], citation["section"])
    assert cited["led by Mara Quist"] == ([1, 1], "Crew Handbook > Shifts")
    assert cited["yellow vest"] == ([2, 2], "Crew Handbook > Safety")
    assert cited["Olle Brandt"] == ([3, 3], "Crew Handbook > Contacts")
    assert cited["dredged in 1902"] == (None, "Port Wenna > History")
    assert cited["built in 1911"] == (None, "Port Wenna > History > Lighthouse")  # the fenced "#" is no heading
    assert cited["timber leave"] == (None, "Port Wenna > Trade")


def test_every_mode_returns_citations_and_references_with_pages(corpus, tmp_path):
    async def run():
        rag = make_rag(tmp_path, offline_extractor="auto")  # relations for the global mode to find
        await rag.initialize_storages()
        try:
            await index(rag, corpus["manual"].parent)
            return {mode: await rag.aquery_data(QUESTION, QueryParam(mode=mode, top_k=10, chunk_top_k=5))
                    for mode in valid_modes() if mode != "bypass"}
        finally:
            await rag.finalize_storages()

    for mode, result in asyncio.run(run()).items():
        assert result["status"] == "success", (mode, result)
        chunks = result["data"]["chunks"]
        assert chunks, mode
        for chunk in chunks:
            citation = chunk["citation"]
            assert citation["file"] == chunk["file_path"] and citation["span"] is not None, mode
            if chunk["file_path"] == "manual.pdf":
                assert citation["pages"] and citation["section"], mode
        for reference in result["data"]["references"]:
            cited = [c["citation"] for c in chunks if c.get("reference_id") == reference["reference_id"]]
            assert reference["file_path"] == cited[0]["file"], mode
            expected = sorted({p for c in cited if c["pages"] for p in range(c["pages"][0], c["pages"][1] + 1)})
            assert reference["pages"] == (expected or None), mode
        for chunk in chunks:  # each whole valve sentence a chunk holds names its page: a cited one
            for page in re.findall(r"Valve V\d\d-\d\d on page (\d+) is inspected every \d+ days by crew \d+\.",
                                   chunk["content"]):
                first, last = chunk["citation"]["pages"]
                assert first <= int(page) <= last, (mode, page, chunk["citation"])


def test_citations_survive_reopening_deleting_and_inserting_again(corpus, tmp_path):
    async def cited_pages(rag):
        return sorted(tuple(c["pages"]) for _, _, c in await stored_chunks(rag) if c["file"] == "manual.pdf")

    async def run():
        rag = make_rag(tmp_path)
        await rag.initialize_storages()
        await index(rag, corpus["manual"].parent)
        before = await cited_pages(rag)
        await rag.finalize_storages()
        rag = make_rag(tmp_path)
        await rag.initialize_storages()
        reopened = await cited_pages(rag)
        docs = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
        manual = next(doc_id for doc_id, status in docs.items() if status.file_path == "manual.pdf")
        await rag.adelete_by_doc_id(manual)
        deleted = await cited_pages(rag)
        await index(rag, corpus["manual"].parent)
        again = await cited_pages(rag)
        await rag.finalize_storages()
        return before, reopened, deleted, again

    before, reopened, deleted, again = asyncio.run(run())
    assert before and reopened == before and deleted == [] and again == before


def test_timestamps_and_tables_keep_their_citations(tmp_path):
    table = "<table><tr><td>Pump</td><td>Line</td></tr><tr><td>P7</td><td>4</td></tr></table>"
    document = f"# Plant\nThe pumps are listed below.\f{table}\nPump P7 feeds line four."

    async def run():
        rag = make_rag(tmp_path)
        await rag.initialize_storages()
        try:
            await rag.ainsert(document, file_paths="plant.txt", timestamps=["2024-05-01"])
            return await stored_chunks(rag)
        finally:
            await rag.finalize_storages()

    chunks = asyncio.run(run())
    table_chunks = [c for _, r, c in chunks if "<table>" in r["content"]]
    assert table_chunks and all(c["pages"][0] == 2 and c["section"] == "Plant" for c in table_chunks)
    assert all(r["content"].startswith("[Time: 2024-05-01]") for _, r, _ in chunks)
    assert all(c["span"] is not None for _, _, c in chunks)
