"""Answers with numbered citations, through the real OpenAI client against the scripted server: the LLM is asked
for [n] markers, and a marker that resolves to no returned reference is taken out and recorded."""

from __future__ import annotations

import asyncio

import pytest

from lightrag_prism import QueryParam
from lightrag_prism.citations.answer import CITATION_INSTRUCTION
from tests.insert._rag import make_rag

DOCS = {"harbour.md": "# Port Wenna\n\n## History\n\nThe harbour of Port Wenna was dredged in 1902 by the Wenna Dock "
                      "Company.\fThe Wenna Dock Company was founded by Ines Vale.",
        "light.md": "# Lighthouse\n\nThe Port Wenna lighthouse was built in 1911."}
ANSWER_MARK = "---Context---"  # LightRAG's answer prompt; the extraction and keyword prompts have other markers
MISCITED = ("The harbour was dredged in 1902 [1], by a company Ines Vale founded [1][4].\n\n### References\n\n"
            "* [1] harbour.md\n* [4] minutes.pdf\n")


def run_queries(server, tmp_path, param: QueryParam, stream: bool = False):
    server.script(ANSWER_MARK, MISCITED)

    async def run():
        rag = await make_rag(server, tmp_path)
        try:
            await rag.ainsert(list(DOCS.values()), file_paths=list(DOCS))
            result = await rag.aquery_llm("Who founded the company that dredged the harbour?", param)
            response = result["llm_response"]
            if stream:
                response["content"] = "".join([piece async for piece in response["response_iterator"]])
            return result
        finally:
            await rag.finalize_storages()

    return asyncio.run(run())


@pytest.mark.parametrize("mode", ["prism", "naive"])  # a plugin mode and an unguarded stock one
@pytest.mark.parametrize("stream", [False, True])
def test_a_made_up_marker_is_taken_out_and_recorded(scripted_server, tmp_path, mode, stream):
    result = run_queries(scripted_server, tmp_path, QueryParam(mode=mode, stream=stream), stream)
    references = {r["reference_id"]: r for r in result["data"]["references"]}
    assert set(references) >= {"1"} and "4" not in references
    answer = result["llm_response"]["content"]
    assert answer == ("The harbour was dredged in 1902 [1], by a company Ines Vale founded [1].\n\n### References\n\n"
                      "* [1] harbour.md\n")
    cited = references["1"]
    assert cited["file_path"] == "harbour.md" and cited["pages"] == [1, 2] and cited["sections"] == ["Port Wenna"]
    notes = [f for f in result["metadata"]["prism"]["fallbacks"] if f["step"] == "citations"]
    assert len(notes) == 1 and "[4]" in notes[0]["reason"]
    prompts = [r.text for r in scripted_server.chat_requests() if ANSWER_MARK in r.text]
    assert prompts and CITATION_INSTRUCTION in prompts[-1]


def test_an_answer_citing_only_returned_references_is_unchanged(scripted_server, tmp_path):
    scripted_server.script(ANSWER_MARK, "Dredged in 1902 [1].")
    result = run_queries(scripted_server, tmp_path, QueryParam(mode="hipporag"))
    assert result["llm_response"]["content"] == "Dredged in 1902 [1]."
    assert not [f for f in result["metadata"]["prism"]["fallbacks"] if f["step"] == "citations"]


def test_cite_answers_off_leaves_the_prompt_and_the_answer_alone(scripted_server, tmp_path):
    scripted_server.script(ANSWER_MARK, MISCITED)

    async def run():
        rag = await make_rag(scripted_server, tmp_path, cite_answers=False)
        try:
            await rag.ainsert(list(DOCS.values()), file_paths=list(DOCS))
            return await rag.aquery("Who founded the company?", QueryParam(mode="prism"))
        finally:
            await rag.finalize_storages()

    assert asyncio.run(run()) == MISCITED
    assert not any(CITATION_INSTRUCTION in r.text for r in scripted_server.chat_requests())
