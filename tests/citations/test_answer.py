"""The [n] marker filter: made-up markers out, everything else kept, the same result however a stream is cut."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from lightrag_prism.citations.answer import CitationFilter

ANSWER = ("Port Wenna was dredged in 1902 [1]. Its lighthouse dates from 1911 [2][7]. The index a[0] and the "
          "list [1, 9] and a link [3](https://example.org) stay readable [^2].\n\n### References\n\n"
          "* [1] notes.md\n* [7] invented.pdf\n- [2] manual.pdf\n")
EXPECTED = ("Port Wenna was dredged in 1902 [1]. Its lighthouse dates from 1911 [2]. The index a[0] and the "
            "list [1] and a link [3](https://example.org) stay readable [^2].\n\n### References\n\n"
            "* [1] notes.md\n- [2] manual.pdf\n")


def filtered(text: str, valid, cuts=()) -> tuple[str, list[str]]:
    markers = CitationFilter(valid)
    bounds = [0, *sorted(set(cuts)), len(text)]
    shown = "".join(markers.feed(text[a:b]) for a, b in zip(bounds, bounds[1:])) + markers.flush()
    return shown, markers.dropped


def test_made_up_markers_and_reference_lines_are_taken_out():
    shown, dropped = filtered(ANSWER, {"1", "2"})
    assert shown == EXPECTED
    assert dropped == ["[7]", "[9]", "[7]"]


def test_a_marker_left_alone_goes_with_the_space_before_it():
    assert filtered("Dredged in 1902 [4]. Built in 1911 [5, 6].", {"1"})[0] == "Dredged in 1902. Built in 1911."


def test_an_answer_with_only_valid_markers_is_unchanged():
    text = "Fact [1]. Other fact [2].\n* [1] a.md\n* [2] b.md"
    assert filtered(text, {"1", "2"}) == (text, [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(ANSWER)), max_size=12))
def test_a_stream_cut_anywhere_gives_the_whole_answer_s_result(cuts):
    assert filtered(ANSWER, {"1", "2"}, cuts) == (EXPECTED, ["[7]", "[9]", "[7]"])


def test_a_stream_shows_text_before_the_end():
    """Held back: only what may still become a marker or a references line."""
    markers = CitationFilter({"1"})
    assert markers.feed("The harbour was dredged in 1902 ") == "The harbour was dredged in 1902"
    assert markers.feed("[") == ""
    assert markers.feed("1] by the company") == " [1] by the company"
