import json
import random

import pytest
from lightrag.chunker.token_size import chunking_by_token_size
from lightrag.exceptions import ChunkTokenLimitExceededError
from lightrag.utils_pipeline import build_chunks_dict_from_chunking_result

from lightrag_prism.insert.tables.chunker import (
    CONTEXT_AFTER_MARKER,
    CONTEXT_BEFORE_MARKER,
    TableChunkerConfig,
    chunk_document,
    make_table_aware_chunker,
)
from lightrag_prism.insert.tables.token_budget import count_tokens

WORDS = ["revenue", "grew", "margin", "Apple", "TSMC", "quarter", "the", "of", "and", "in", "2024"]
CJK = "台積電營業收入成長鑫龘齉爨蘋果公司第三季營收毛利率"


def _table(n_rows, header=True, attrs=""):
    head = "<thead><tr><th>Year</th><th>Revenue (USD m)</th></tr></thead>" if header else ""
    body = "".join(f"<tr><td>{2000 + i}</td><td>{1000 + 7 * i}</td></tr>" for i in range(n_rows))
    return f"<table{attrs}>{head}<tbody>{body}</tbody></table>"


def assert_lossless(doc, chunks):
    """Every non-whitespace input character lies in a chunk's span, and that chunk holds the span's text."""
    covered = bytearray(len(doc))
    for chunk in chunks:
        start, end = chunk["source_span"]
        assert doc[start:end] in chunk["content"]
        covered[start:end] = b"\x01" * (end - start)
    missing = [i for i, ch in enumerate(doc) if not ch.isspace() and not covered[i]]
    assert not missing, f"lost characters at {missing[:10]}: {doc[missing[0]:missing[0] + 20]!r}"
    starts = [c["source_span"][0] for c in chunks]
    assert starts == sorted(starts)
    assert [c["chunk_order_index"] for c in chunks] == list(range(len(chunks)))


def test_signature_matches_lightrag_legacy_contract(tokenizer):
    fn = make_table_aware_chunker()
    doc = "Intro. " + _table(3) + " Outro."
    positional = fn(tokenizer, doc, None, False, 100, 1200)
    assert positional == fn(tokenizer, doc)
    assert all({"tokens", "content", "chunk_order_index", "is_table"} <= set(c) for c in positional)


def test_small_table_stays_whole_with_context(tokenizer):
    doc = "Apple reported results. Table 1 shows revenue.\n" + _table(3) + "\nFigures are unaudited."
    chunks = make_table_aware_chunker(table_context_tokens=50)(tokenizer, doc)
    tables = [c for c in chunks if c["is_table"]]
    assert len(tables) == 1
    content = tables[0]["content"]
    assert _table(3) in content
    assert content.startswith(CONTEXT_BEFORE_MARKER + "\nApple reported results.")
    assert content.endswith(CONTEXT_AFTER_MARKER + "\nFigures are unaudited.")
    assert tables[0]["table_parts"] == 1 and tables[0]["tokens"] == count_tokens(tokenizer, content)
    assert [c["is_table"] for c in chunks] == [False, True, False]  # document order kept


def test_context_is_token_measured_and_stops_at_neighbouring_tables(tokenizer):
    before = "前文" + CJK * 20
    doc = _table(1) + before + _table(2) + "after text " * 50
    chunks = make_table_aware_chunker(table_context_tokens=7)(tokenizer, doc)
    second = [c for c in chunks if c["is_table"]][1]["content"]
    ctx_before = second.split(CONTEXT_BEFORE_MARKER + "\n")[1].split("\n<table>")[0]
    ctx_after = second.split(CONTEXT_AFTER_MARKER + "\n")[1]
    assert 0 < count_tokens(tokenizer, ctx_before) <= 7 and before.endswith(ctx_before)
    assert 0 < count_tokens(tokenizer, ctx_after) <= 7 and "\ufffd" not in second
    first = [c for c in chunks if c["is_table"]][0]["content"]
    assert CONTEXT_BEFORE_MARKER not in first  # nothing before the first table
    assert CONTEXT_AFTER_MARKER in first and "<table>" not in first.split(CONTEXT_AFTER_MARKER)[1]


def test_large_table_split_on_rows_with_repeated_header(tokenizer):
    doc = "Lead. " + _table(60, attrs=' class="fin"') + " Tail."
    chunks = make_table_aware_chunker(table_max_tokens=120, table_context_tokens=0)(tokenizer, doc)
    parts = [c for c in chunks if c["is_table"]]
    assert len(parts) > 3 and [p["table_part"] for p in parts] == list(range(1, len(parts) + 1))
    for part in parts:
        body = part["content"]
        assert part["tokens"] <= 120
        assert body.startswith('<table class="fin">') and body.endswith("</table>")
        assert "<thead><tr><th>Year</th><th>Revenue (USD m)</th></tr></thead>" in body
        assert body.count("<tr>") >= 2  # header plus at least one data row
    rows = [f"<td>{2000 + i}</td>" for i in range(60)]
    assert all(sum(r in p["content"] for p in parts) == 1 for r in rows)  # each row exactly once
    assert_lossless(doc, chunks)


def test_huge_row_is_split_by_tokens_without_loss(tokenizer):
    cell = " ".join(random.Random(3).choice(WORDS) for _ in range(400))
    doc = f"<table><tr><th>H</th></tr><tr><td>{cell}</td></tr><tr><td>small</td></tr></table>"
    chunks = make_table_aware_chunker(table_max_tokens=50, table_context_tokens=0)(tokenizer, doc)
    assert len(chunks) > 5 and all(c["is_table"] and c["tokens"] <= 50 for c in chunks)
    assert_lossless(doc, chunks)


def test_unclosed_table_runs_to_end_and_gets_closed(tokenizer):
    doc = "Intro. <table><tr><th>A</th></tr><tr><td>1</td></tr> trailing words"
    chunks = make_table_aware_chunker()(tokenizer, doc)
    assert [c["is_table"] for c in chunks] == [False, True]
    assert chunks[1]["content"].endswith("trailing words</table>")
    assert_lossless(doc, chunks)


def test_text_only_document_matches_lightrag_chunker(tokenizer):
    rng = random.Random(5)
    doc = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 120))) for _ in range(12))
    for sep, size, overlap in [(None, 64, 8), (None, 100, 0), ("\n\n", 40, 5)]:
        ours = make_table_aware_chunker()(tokenizer, doc, sep, False, overlap, size)
        theirs = chunking_by_token_size(tokenizer, doc, sep, False, overlap, size)
        assert [c["content"] for c in ours] == [c["content"] for c in theirs if c["content"]]


def test_cjk_text_has_no_broken_characters(tokenizer):
    doc = (CJK * 40) + _table(2) + (CJK * 40)
    for overlap in (0, 5):
        chunks = make_table_aware_chunker(table_context_tokens=9)(tokenizer, doc, None, False, overlap, 23)
        assert not any("\ufffd" in c["content"] for c in chunks)
        assert_lossless(doc, chunks)


def test_split_by_character_only_keeps_lightrag_error(tokenizer):
    doc = "short\n" + "long " * 200
    with pytest.raises(ChunkTokenLimitExceededError):
        make_table_aware_chunker()(tokenizer, doc, "\n", True, 0, 50)


def test_embed_cap_holds_for_every_chunk(tokenizer):
    doc = ("words " * 300) + _table(40) + (CJK * 30) + _table(2)
    chunks = make_table_aware_chunker(table_max_tokens=500, table_context_tokens=100, embed_max_tokens=90)(
        tokenizer, doc, None, False, 10, 400
    )
    assert all(c["tokens"] <= 90 for c in chunks)
    assert all(c["tokens"] == count_tokens(tokenizer, c["content"]) for c in chunks)
    assert_lossless(doc, chunks)


def test_output_survives_lightrag_chunk_dict_builder(tokenizer):
    chunks = make_table_aware_chunker()(tokenizer, "Intro. " + _table(2) + " Outro.")
    stored = build_chunks_dict_from_chunking_result(chunks, doc_id="doc-1", file_path="f.html")
    assert list(stored) == ["doc-1-chunk-000", "doc-1-chunk-001", "doc-1-chunk-002"]
    assert stored["doc-1-chunk-001"]["is_table"] is True
    json.dumps(stored)  # JSON KV storage must be able to persist the extra keys


@pytest.mark.parametrize("value", [0, -1, 1.5, "10"])
def test_config_validation(value):
    with pytest.raises(ValueError):
        TableChunkerConfig(table_max_tokens=value)
    with pytest.raises(ValueError):
        TableChunkerConfig(embed_max_tokens=value)


def test_empty_and_whitespace_documents(tokenizer):
    assert chunk_document(tokenizer, "") == []
    assert chunk_document(tokenizer, " \n\t ") == []


# --------------------------------------------------------------------------- property test


def _text(rng):
    kind = rng.random()
    if kind < 0.4:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 60)))
    if kind < 0.7:
        return "".join(rng.choice(CJK) for _ in range(rng.randint(0, 80)))
    return rng.choice(["\n\n", "<p>", "</p>", "<div class='a'>", "</div>", " </table> ", "<!-- <table> -->", "🙂"])


def _rand_table(rng, depth=0):
    tag = rng.choice(["table", "TABLE"])
    attrs = rng.choice(["", ' border="1"', " class='t' id=x"])
    head = ""
    if rng.random() < 0.5:
        head = "<thead><tr>" + "".join(f"<th>{rng.choice(WORDS)}</th>" for _ in range(3)) + "</tr></thead>"
    elif rng.random() < 0.5:
        head = "<tr>" + "<th>年</th><th>Rev</th>" + "</tr>"
    rows = []
    for _ in range(rng.randint(0, 25)):
        cells = []
        for _ in range(rng.randint(1, 4)):
            if depth < 2 and rng.random() < 0.05:
                cells.append(f"<td>{_rand_table(rng, depth + 1)}</td>")
            else:
                cells.append(f"<td>{_text(rng)[:60]}</td>")
        close = "</tr>" if rng.random() < 0.9 else ""  # sometimes missing </tr>
        rows.append("<tr>" + "".join(cells) + close)
    wrap = rng.choice(["", "<tbody>"])
    end = f"</{wrap[1:]}" if wrap else ""
    return f"<{tag}{attrs}>{head}{wrap}{''.join(rows)}{end}</{tag}>"


def _rand_doc(rng):
    parts = []
    for _ in range(rng.randint(0, 8)):
        parts.append(_text(rng))
        if rng.random() < 0.5:
            table = _rand_table(rng)
            parts.append(rng.choice(["{}", "<div>{}</div>", "<p>{}</p>"]).format(table))
    if rng.random() < 0.15:
        parts.append("<table><tr><td>unclosed " + _text(rng))
    return "".join(parts)


def test_lossless_on_random_documents(tokenizer):
    rng = random.Random(20240301)
    for _ in range(150):
        doc = _rand_doc(rng)
        size = rng.randint(12, 150)
        overlap = rng.randint(0, size // 3)
        config = TableChunkerConfig(
            table_max_tokens=rng.choice([None, 25, 60, 300]),
            table_context_tokens=rng.choice([0, 5, 30]),
            embed_max_tokens=rng.choice([None, 40, 200]),
        )
        sep = rng.choice([None, None, "\n\n", "</p>"])
        chunks = chunk_document(
            tokenizer, doc, config=config, split_by_character=sep,
            chunk_overlap_token_size=overlap, chunk_token_size=size,
        )
        assert_lossless(doc, chunks)
        assert not any("\ufffd" in c["content"] for c in chunks)
        for c in chunks:
            assert c["tokens"] == count_tokens(tokenizer, c["content"])
            if config.embed_max_tokens:
                assert c["tokens"] <= config.embed_max_tokens


def test_prism_chunker_reads_a_whole_html_page_as_its_text_with_tables_kept():
    from lightrag_prism.backends.tokenizer import OfflineTokenizer
    from lightrag_prism.insert.pipeline import make_prism_chunker

    page = ("<!DOCTYPE html>\n<html><head><title>t</title><script>var x = 1;</script></head><body>"
            f"<p>Revenue by year.</p>{_table(3)}<p>Figures audited.</p></body></html>")
    tokenizer = OfflineTokenizer()
    aware = make_prism_chunker(None, {}, table_aware=True, embed_max_tokens=None)
    text = "\n".join(c["content"] for c in aware(tokenizer, page, None, False, 100, 1200))
    assert "Revenue by year." in text and "Figures audited." in text and _table(3) in text
    assert not any(tag in text for tag in ("<html>", "<body>", "<p>", "var x", "<title>", "DOCTYPE"))
    fragment = f"<p>Revenue by year.</p>{_table(3)}"  # not a whole page: left as it is
    assert "<p>Revenue by year.</p>" in "\n".join(c["content"] for c in aware(tokenizer, fragment, None, False, 100,
                                                                                1200))
    plain = make_prism_chunker(None, {}, table_aware=False, embed_max_tokens=None)
    assert "<body>" in "\n".join(c["content"] for c in plain(tokenizer, page, None, False, 100, 1200))
