import random

from bs4 import BeautifulSoup

from lightrag_prism.insert.tables.html import (
    TableSpan,
    ends_with_table_close,
    find_table_spans,
    header_rows,
    header_text,
    table_layout,
)


def spans_text(doc):
    return [doc[s.start : s.end] for s in find_table_spans(doc)]


def test_simple_nested_uppercase_attributes():
    doc = 'a <TABLE class="x"><tr><td><table><tr><td>in</td></tr></table></td></tr></TABLE> b <table id=2></table>'
    spans = find_table_spans(doc)
    assert [doc[s.start : s.end] for s in spans] == [
        '<TABLE class="x"><tr><td><table><tr><td>in</td></tr></table></td></tr></TABLE>',
        "<table id=2></table>",
    ]
    assert all(s.closed for s in spans)


def test_unclosed_table_runs_to_end_and_stray_close_is_text():
    doc = "x </table> y <table><tr><td>1</td></tr> tail"
    (span,) = find_table_spans(doc)
    assert span == TableSpan(13, len(doc), closed=False)


def test_comments_and_lookalike_tags_are_ignored():
    doc = "<!-- <table> --> <tablet> <table-x> <tableau>"
    assert find_table_spans(doc) == []
    assert find_table_spans("<!-- unclosed comment <table>") == []


def test_malformed_markup_never_crashes():
    rng = random.Random(1)
    atoms = ["<", ">", "<table", "</table", "<tr>", "</tr>", "<!--", "-->", "<th>", "x", " ", '"', "<td", "/>"]
    for _ in range(300):
        doc = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 40)))
        for span in find_table_spans(doc):
            assert 0 <= span.start < span.end <= len(doc)
            layout = table_layout(doc, span)
            header_text(doc, header_rows(doc, layout))


def _random_table(rng, depth=0):
    rows = []
    for r in range(rng.randint(0, 4)):
        cells = []
        for c in range(rng.randint(1, 3)):
            inner = _random_table(rng, depth + 1) if depth < 2 and rng.random() < 0.2 else f"v{r}{c}"
            cells.append(f"<td>{inner}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    tag = rng.choice(["table", "TABLE", "Table"])
    return f'<{tag} border="1">' + "".join(rows) + f"</{tag}>"


def test_top_level_tables_match_beautifulsoup():
    rng = random.Random(7)
    for _ in range(100):
        parts = []
        for _ in range(rng.randint(0, 5)):
            parts.append(rng.choice(["text ", "<p>para</p>", "<div>", "</div>", "台積電 "]))
            if rng.random() < 0.5:
                parts.append(_random_table(rng))
        doc = "".join(parts)
        soup = BeautifulSoup(doc, "html.parser")
        expected = [t.get_text() for t in soup.find_all("table") if t.find_parent("table") is None]
        got = [BeautifulSoup(t, "html.parser").get_text() for t in spans_text(doc)]
        assert got == expected


def test_layout_rows_thead_and_nested_rows():
    doc = (
        "<table><caption>c</caption><thead><tr><th>A</th></tr></thead><tbody>"
        "<tr><td><table><tr><td>n</td></tr></table></td></tr><tr><td>2</td></tbody></table>"
    )
    (span,) = find_table_spans(doc)
    layout = table_layout(doc, span)
    assert doc[span.start : layout.open_tag_end] == "<table>"
    assert [doc[r.start : r.end] for r in layout.rows] == [
        "<tr><th>A</th></tr>",
        "<tr><td><table><tr><td>n</td></tr></table></td></tr>",
        "<tr><td>2</td>",  # no </tr>: ends at the next section tag
    ]
    heads = header_rows(doc, layout)
    assert header_text(doc, heads) == "<thead><tr><th>A</th></tr></thead>"


def test_header_is_first_row_with_th_only():
    doc = "<table><tr><th>Y</th></tr><tr><td>1</td></tr></table>"
    layout = table_layout(doc, find_table_spans(doc)[0])
    assert header_text(doc, header_rows(doc, layout)) == "<tr><th>Y</th></tr>"
    doc2 = "<table><tr><td>Y</td></tr><tr><th>1</th></tr></table>"
    assert header_rows(doc2, table_layout(doc2, find_table_spans(doc2)[0])) == ()


def test_ends_with_table_close():
    assert ends_with_table_close("<tr></tr></TABLE >\n")
    assert not ends_with_table_close("<tr></tr>")
