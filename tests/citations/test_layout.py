"""citations/layout.py against a character-by-character reference: spans, pages and section paths."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from lightrag_prism.citations.layout import Layout, mark_pages, page_marker


def reference(document: str):
    """(clean text, document offset of each clean character, page of each clean character)."""
    clean, offsets, pages = [], [], []
    page, i = None, 0
    marker = re.compile(r"<!-- page (\d+) -->\n?")
    while i < len(document):
        found = marker.match(document, i)
        if found:
            page = int(found.group(1))
            i = found.end()
            continue
        clean.append(document[i])
        offsets.append(i)
        pages.append(page)
        i += 1
    return "".join(clean), offsets, pages


def reference_section(text: str, offset: int) -> tuple[str, ...]:
    """The heading path at ``offset``, from the lines that start at or before it (fences toggle)."""
    stack, fence, start = [], None, 0
    for line in text.splitlines(keepends=True):
        if start > offset:
            break
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
        elif fence is None and (m := re.match(r"(#{1,6}) +(\S.*?)\s*$", line)):
            level = len(m.group(1))
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, m.group(2))]
        start += len(line)
    return tuple(t for _, t in stack)


PIECES = st.sampled_from(["alpha beta.\n", "gamma\n", "# Top\n", "## Mid part\n", "### Low\n", "```\n",
                          "# inside?\n", "\n", "delta epsilon zeta eta.\n", "\f"])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=30), st.data())
def test_citation_of_any_slice_matches_the_reference(pieces, data):
    document = mark_pages("".join(pieces))
    layout = Layout.parse(document)
    clean, offsets, pages = reference(document)
    assert layout.text == clean
    if not clean:
        return
    start = data.draw(st.integers(0, len(clean) - 1))
    end = data.draw(st.integers(start + 1, len(clean)))
    citation = layout.citation(start, end)
    assert citation.span == (offsets[start], offsets[end - 1] + 1)
    assert reference(document[citation.span[0]:citation.span[1]])[0] == clean[start:end]
    if "\f" in "".join(pieces):
        assert citation.pages == (pages[start], pages[end - 1])
    else:
        assert citation.pages is None
    assert citation.section == reference_section(clean, start)


def test_pages_sections_and_spans_of_a_small_document():
    document = mark_pages("# Acme\nAcme builds arms.\n## History\nFounded in 2011.\fStill in Port Wenna.\f\fEnd.")
    assert document.startswith(page_marker(1) + "\n# Acme")
    layout = Layout.parse(document)
    assert layout.text == "# Acme\nAcme builds arms.\n## History\nFounded in 2011.\nStill in Port Wenna.\n\nEnd."
    founded = layout.text.index("Founded")
    still = layout.text.index("Still")
    citation = layout.citation(founded, still + len("Still in Port Wenna."))
    assert citation.pages == (1, 2) and citation.section_path() == "Acme > History"
    assert document[citation.span[0]:citation.span[1]] == f"Founded in 2011.\n{page_marker(2)}\nStill in Port Wenna."
    assert layout.citation(layout.text.index("End"), len(layout.text)).pages == (4, 4)  # page 3 is blank
    assert layout.citation(0, 3).section == ("Acme",)  # a chunk starting on a heading is in its section


def test_text_without_pages_or_headings():
    layout = Layout.parse("plain text, no structure")
    assert layout.citation(0, 5).pages is None and layout.citation(0, 5).section_path() is None
    assert mark_pages("no page breaks") == "no page breaks"


def test_locate_finds_chunks_in_order_and_none_for_rewritten_text():
    layout = Layout.parse("one two three. one two four.")
    assert layout.locate(["one two", "one two four.", "rewritten"]) == [(0, 7), (15, 28), None]
