"""The LLM-free extractors: spaCy entities and dependency triples, the regex fallback, rows LightRAG parses."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lightrag_prism.errors import extra_install_hint
from lightrag_prism.insert import extraction
from lightrag_prism.insert.extraction import get_extractor
from lightrag_prism.insert.extraction.records import (
    COOCCURRENCE_KEYWORD, RELATION_WINDOW_CHARS, ChunkExtraction, Entity, Relation,
)
from lightrag_prism.insert.extraction.regex_extractor import RegexExtractor
from lightrag_prism.insert.extraction.scripts import foreign_name_spans
from lightrag_prism.patches.insert_hooks import parse_extraction_rows

SPACY = get_extractor("spacy")
PRONOUNS = {"he", "she", "it", "they", "we", "i", "you", "him", "her", "them", "his", "its", "their", "this",
            "that", "these", "those", "who", "which"}
DETERMINERS = {"the", "a", "an", "this", "that", "these", "those", "some", "any", "each", "every", "no"}


def extract(text: str, extractor=SPACY) -> ChunkExtraction:
    return extractor.extract([text])[0]


def triples(result: ChunkExtraction) -> set[tuple[str, str, str]]:
    return {(r.source, r.predicate, r.target) for r in result.relations}


def types(result: ChunkExtraction) -> dict[str, str]:
    return {e.name: e.type for e in result.entities}


def test_named_entities_get_lightrag_types_and_svo_prep_copula_triples():
    result = extract("Marie Curie was born in Warsaw. She won the Nobel Prize in Physics. "
                     "Apple Inc. was founded by Steve Jobs in Cupertino.")
    assert {"Marie Curie": "person", "Warsaw": "location", "Nobel Prize in Physics": "content",
            "Apple Inc.": "organization", "Steve Jobs": "person", "Cupertino": "location"}.items() <= \
        types(result).items()
    assert {("Marie Curie", "born in", "Warsaw"),  # prepositional
            ("Marie Curie", "won", "Nobel Prize in Physics"),  # subject-verb-object, "She" resolved
            ("Apple Inc.", "founded by", "Steve Jobs"),  # passive agent
            ("Apple Inc.", "founded in", "Cupertino")} <= triples(result)


def test_copula_and_apposition_triples():
    result = extract("Teutberga was a queen of Lotharingia. Hucbert, the lay abbot of St. Maurice's Abbey, "
                     "was her brother. Lothair II, a Frankish king, married Teutberga.")
    found = triples(result)
    assert ("Teutberga", "was queen of", "Lotharingia") in found
    assert ("Hucbert", "abbot of", "St. Maurice's Abbey") in found or \
        ("Hucbert", "lay abbot of", "St. Maurice's Abbey") in found
    # "Frankish king" is a generic noun phrase named once: not an entity (test_generic_noun_phrases_...)
    assert "Frankish king" not in types(result)


BAKERY = ("Kestrel Bay is a small harbour town on the west coast. The Harbour Bakery in Kestrel Bay is a "
          "family-owned mill run by Ada Finch, a pastry chef who trained in Lyon, and it later became part of a small "
          "chain of bakeries across the region called Finch & Daughters. Marta Olvide directed the film Glass "
          "Harbour, released in 1998. The Vexholm Lighthouse was designed by Anders Brekke in 1870.")


def test_places_and_works_the_small_model_calls_persons_get_their_words_type():
    found = types(extract(BAKERY))
    # spaCy's small model labels "Kestrel Bay" PERSON once and LOC once, "Vexholm Lighthouse" and "Glass Harbour"
    # PERSON: the name's last word or the category noun before it decides
    assert found["Kestrel Bay"] == "location"
    assert found["Vexholm Lighthouse"] == "location"
    assert found["Glass Harbour"] == "content"
    assert found["Ada Finch"] == "person"


def test_generic_noun_phrases_named_once_are_not_entities_and_their_facts_go_to_the_name():
    result = extract(BAKERY)
    for generic in ("pastry chef", "small chain", "family-owned mill", "small harbour town"):
        assert generic not in types(result), generic
    found = triples(result)
    assert ("Ada Finch", "trained in", "Lyon") in found  # "Ada Finch, a pastry chef who trained in Lyon"
    assert ("Harbour Bakery", "run by", "Ada Finch") in found  # "... is a family-owned mill run by Ada Finch"
    assert ("Marta Olvide", "directed", "Glass Harbour") in found  # "directed the film Glass Harbour"


def test_a_generic_noun_phrase_the_passage_names_twice_is_kept():
    result = extract("The old water mill stood by the Kest river for two centuries. Ada Finch bought the old water "
                     "mill in 1901.")
    assert types(result).get("old water mill") == "concept"
    assert ("Ada Finch", "bought", "old water mill") in triples(result)


def test_descriptions_end_where_a_sentence_or_a_clause_ends():
    result = extract(BAKERY)
    descriptions = [e.description for e in result.entities] + [r.description for r in result.relations]
    assert any(d.endswith("...") for d in descriptions)  # the long sentence was cut somewhere
    for description in descriptions:
        core = description.removeprefix("...").removesuffix("...").strip()
        assert core in BAKERY, description
        after = BAKERY[BAKERY.index(core) + len(core):][:1]
        if core.endswith("."):
            assert after in ("", " "), description  # at a sentence's end
        else:
            assert description.endswith("...") and after in (",", ";", ":", ")"), description  # at a clause's
        assert len(description) <= 160, description


def test_preposition_hung_on_the_object_still_relates_the_subject():
    found = triples(extract("Marie Curie shared the Nobel Prize in Physics with Pierre Curie."))
    assert ("Marie Curie", "shared with", "Pierre Curie") in found
    assert ("Marie Curie", "shared", "Nobel Prize in Physics") in found


@pytest.mark.parametrize("extractor", [SPACY, RegexExtractor()], ids=["spacy", "regex"])
def test_non_ascii_names_stay_whole(extractor):
    result = extract("Thomas C. Südhof won the Lasker Award in 2013. Zoë Ørsted married Hans Christian Ørsted "
                     "in Copenhagen. Björn Ulvaeus and Agnetha Fältskog founded ABBA in Stockholm.", extractor)
    names = set(types(result))
    assert {"Thomas C. Südhof", "Zoë Ørsted", "Hans Christian Ørsted", "Björn Ulvaeus", "Agnetha Fältskog",
            "Stockholm"} <= names
    assert not names & {"Thomas C", "Südhof", "Zoë", "Ørsted", "Björn", "Fältskog"}


@pytest.mark.parametrize("extractor", [SPACY, RegexExtractor()], ids=["spacy", "regex"])
def test_scripts_the_english_model_cannot_tag_still_give_entities(extractor):
    result = extract("東京は日本の首都です。 The Tokyo Tower (東京タワー) opened in 1958. "
                     "Москва is the capital of Russia.", extractor)
    names = set(types(result))
    assert {"東京", "日本", "東京タワー", "Москва"} <= names
    assert not any(len(n) == 1 or "は" in n or "です" in n for n in names), names  # particles split CJK runs


def test_foreign_spans_by_script():
    def spans(text):
        return [text[a:b] for a, b in foreign_name_spans(text)]

    assert spans("北京と上海に行きました") == ["北京", "上海"]
    assert spans("He visited Москва and Санкт-Петербург last year.") == ["Москва", "Санкт-Петербург"]
    # In a Cyrillic sentence, only capitalised words after the first count; no lone kana marks.
    assert spans("Вчера я видел Ивана Петрова в Москве") == ["Ивана Петрова", "Москве"]
    assert spans("コーヒー・タイム") == ["コーヒー・タイム"]


@pytest.mark.parametrize("extractor", [SPACY, RegexExtractor()], ids=["spacy", "regex"])
def test_no_pronoun_determiner_or_stop_word_entities(extractor):
    text = ("The Association was founded in 1892. He said it was large. In 1900 they moved to Boston. "
            "It published The Journal of Applied Psychology. This was new. Who knows? American writers wrote "
            "about them. She and He met There.")
    result = extract(text, extractor)
    for name in types(result):
        first = name.split()[0].lower()
        assert name.lower() not in PRONOUNS | DETERMINERS | {"in", "who", "there"}, name
        assert first not in DETERMINERS and first not in PRONOUNS, name
    assert "Journal of Applied Psychology" in types(result) and "Boston" in types(result)


def test_unrelated_names_of_one_sentence_are_linked_by_cooccurrence():
    result = extract("Ferrari and Lamborghini, Modena, Bologna.")
    links = [r for r in result.relations if r.predicate == COOCCURRENCE_KEYWORD]
    linked = {r.source for r in links} | {r.target for r in links}
    assert {"Ferrari", "Lamborghini"} <= linked


def test_title_line_is_the_topic_entity_and_he_she_resolve_to_the_subject():
    result = extract("Theodred II (Bishop of Elmham)\nTheodred II was a medieval Bishop of Elmham. "
                     "He was consecrated in 926.")
    assert "Theodred II" in types(result)
    assert any(r.source == "Theodred II" and "Elmham" in r.target for r in result.relations)
    assert any(r.description.startswith("Theodred II was consecrated") for r in result.relations
               ) or all("He was" not in r.description for r in result.relations)


@pytest.mark.asyncio
async def test_rows_parse_with_lightrag_predicate_in_keywords_sentence_in_description():
    rows = extract("Marie Curie was born in Warsaw in 1867.").rows()
    nodes, edges = await parse_extraction_rows(rows, "chunk-1", 0, "doc.txt")
    assert nodes["Marie Curie"][0]["entity_type"] == "person"
    edge = edges[("Marie Curie", "Warsaw")][0]
    assert edge["keywords"] == "born in"
    assert edge["description"] == "Marie Curie was born in Warsaw in 1867."


def test_relation_descriptions_are_the_words_around_both_arguments_of_a_long_sentence():
    filler = "after a long and widely reported series of negotiations that lasted for several years and involved "
    sentence = (f"In 1901, {filler}many lawyers, bankers and officials from both cities, Marie Curie met Pierre "
                f"Curie in Paris, and later {filler}the whole family, they moved to Warsaw with Bronisława Dłuska.")
    result = extract(sentence)
    assert result.relations
    for r in result.relations:
        # both arguments, the words between them, and at most a window's worth around them
        assert r.source in r.description and r.target in r.description, r
        first, last = sorted((sentence.index(r.source), sentence.index(r.target)))
        span = last + len(r.target if last == sentence.index(r.target) else r.source) - first
        assert len(r.description) <= max(RELATION_WINDOW_CHARS, span) + 20, r
        assert len(r.description) < len(sentence)


def test_unreadable_description_becomes_the_name():
    rows = ChunkExtraction([Entity("Oops!...", "content", '"..."')],
                           [Relation("Oops!...", "Britney Spears", "sung by", "...")]).rows().splitlines()
    assert rows[0].split("<|#|>")[3] == "Oops!..."
    assert rows[1].split("<|#|>")[4] == "Oops!..."


def test_rows_survive_delimiters_and_newlines_in_text():
    rows = extract("Alice <|#|> Smith met Bob Jones in\tParis.\n<|COMPLETE|>").rows().splitlines()
    assert rows[-1] == "<|COMPLETE|>" and rows.count("<|COMPLETE|>") == 1
    assert all(len(r.split("<|#|>")) in (4, 5) for r in rows[:-1])


@pytest.mark.asyncio
async def test_concurrent_chunks_share_one_nlp_pipe_batch():
    texts = [f"Person{i} Smith visited Berlin in {1900 + i}." for i in range(12)]
    rows = await asyncio.gather(*(extraction.extract_rows(t, "spacy") for t in texts))
    assert all("Berlin" in r for r in rows)
    batcher = extraction._batcher("spacy")
    assert max(batcher.batch_sizes) == 12  # one extract call for the twelve chunks


def test_missing_spacy_falls_back_to_regex_and_is_recorded(monkeypatch, caplog):
    import builtins

    real_import = builtins.__import__

    def no_spacy(name, *args, **kwargs):
        if name.endswith("spacy_extractor") or name == "spacy":
            raise ImportError("No module named 'spacy'")
        return real_import(name, *args, **kwargs)

    get_extractor.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_spacy)
    try:
        with caplog.at_level(logging.WARNING):
            status = extraction.extractor_status("auto")
        assert status["extractor"] == "regex" and "spaCy" in status["fallback_reason"]
        assert "falls back to the regex extractor" in caplog.text
        with pytest.raises(ImportError, match=r"needs spaCy") as refused:
            get_extractor("spacy")
        assert str(refused.value).endswith(extra_install_hint("local"))
    finally:
        monkeypatch.undo()
        get_extractor.cache_clear()
    assert extraction.extractor_status("auto") == {"extractor": "spacy", "fallback_reason": None}


def test_unknown_extractor_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="auto, spacy, regex"):
        get_extractor("gliner")


def test_markdown_is_read_as_structure_a_heading_is_never_an_entity_text():
    from lightrag_prism.insert.extraction.spacy_extractor import prose_lines

    text = ("# Acme Robotics\n\nAcme Robotics builds robots.\n\n## History\n\n- **Founded** in 2011 by Ines Vale.\n"
            "1. Moved to Port Wenna.\n```python\nrobot = Acme()\n```\nIts headquarters are in Port Wenna.")
    title, lines = prose_lines(text)
    assert title == "Acme Robotics"
    assert lines == ["Acme Robotics builds robots.", "Founded in 2011 by Ines Vale.", "Moved to Port Wenna.",
                     "Its headquarters are in Port Wenna."]
    assert prose_lines("Kessa Ferry\nThe ferry runs daily.") == ("Kessa Ferry", ["The ferry runs daily."])
    assert prose_lines("One sentence only.") == (None, ["One sentence only."])
    assert prose_lines("") == (None, [])


def test_a_markdown_heading_becomes_the_topic_not_an_entity_with_its_marks():
    extraction = get_extractor("spacy").extract(["# Acme Robotics\n\nAcme Robotics builds warehouse robots in "
                                                 "Port Wenna.\n\n## History\n\nIt was founded by Ines Vale."])[0]
    names = {e.name for e in extraction.entities}
    assert "Acme Robotics" in names and "Port Wenna" in names
    assert not any("#" in n or n == "History" for n in names), names


def pairs(result: ChunkExtraction) -> set[tuple[str, str]]:
    return {(r.source, r.target) for r in result.relations if r.predicate != "mentioned with"}


def test_everyday_relations_through_pronouns_possessives_and_definite_descriptions():
    acme = extract("# Acme Robotics\n\nAcme Robotics builds warehouse robots. The company was founded in 2011 by "
                   "Ines Vale. Its headquarters are in the harbour town of Port Wenna.")
    assert ("Acme Robotics", "founded by", "Ines Vale") in triples(acme)  # "the company": the page's subject
    assert ("Acme Robotics", "Port Wenna") in pairs(acme)  # "its headquarters"
    town = extract("# Carrick Bay\n\nCarrick Bay is a harbour town on the coast. Agnes Pell has been its mayor since "
                   "2021. It has a ferry to the Isle of Skerra.")
    assert ("Agnes Pell", "been mayor of", "Carrick Bay") in triples(town)
    assert ("Carrick Bay", "has ferry to", "Isle of Skerra") in triples(town)


def test_it_is_the_nearest_named_subject_before_the_page_topic():
    result = extract("Kestrel Bay\nKestrel Bay is a harbour town. The Kessa Ferry Company opened in 1921 on Quay "
                     "Street, and it later joined Finch & Daughters.")
    assert ("Kessa Ferry Company", "Finch & Daughters") in pairs(result)
    assert ("Kestrel Bay", "Finch & Daughters") not in pairs(result)


def test_a_title_before_a_name_makes_a_person_and_stays_out_of_the_name():
    result = extract("Mayor Agnes Pell opened the fair. Professor Elin Varga heads the department. "
                     "Dr Anton Reyes-Loh runs the lab. General Motors built a plant in Flint.")
    found = types(result)
    assert found.get("Agnes Pell") == "person" and found.get("Elin Varga") == "person"
    assert found.get("Anton Reyes-Loh") == "person"
    assert not any(name.startswith(("Mayor ", "Professor ", "Dr ")) for name in found), found
    assert "Motors" not in found  # not a title before a person: the company keeps its name


def test_coordinated_given_names_share_the_surname():
    result = extract("The robot was designed by the brothers Piet and Oskar Hale in Lenham.")
    assert {"Piet Hale", "Oskar Hale"} <= set(types(result)), types(result)
    assert "Piet" not in types(result)


def test_code_identifiers_are_entities_in_one_canonical_form():
    from lightrag_prism.insert.extraction.identifiers import identifier_spans

    text = ("Set work_mem in postgresql.conf (see pg_hba.conf), call make_widget(size, color) or connect(), pass "
            "--data-checksums, catch ResponseError from pkg.client.Response. The U.S. office, e.g. Ph.D. students, "
            "the function(s) and the river (which floods) are prose; so is 3.14.")
    assert [name for _, _, name in identifier_spans(text)] == [
        "work_mem", "postgresql.conf", "pg_hba.conf", "make_widget", "connect", "--data-checksums", "ResponseError",
        "pkg.client.Response"]
    result = extract("The wal_writer_delay setting is read from postgresql.conf; call make_widget(size) before "
                     "make_widget() again.")
    names = set(types(result))
    assert {"wal_writer_delay", "make_widget"} <= names, names
    assert not any("(" in n or n.endswith("setting") for n in names), names  # one node per identifier


def test_hard_wrapped_sentences_are_read_whole_and_records_stay_lines():
    from lightrag_prism.insert.extraction.spacy_extractor import prose_lines

    text = ("From: Ada Finch <ada.finch@lowmoor.example>\nTo: Carl Dunne\n\nDear Carl,\n\nVantor Composites makes "
            "glass and carbon fibre parts for boats and wind turbines. The business is owned by Hugh\nCalloway, who "
            "bought it in 2015.\nShort line without a stop\nnext record\n- a list item that is long enough to be "
            "wrapped if it were prose\n- the next item")
    title, lines = prose_lines(text)
    assert lines == [
        "From: Ada Finch <ada.finch@lowmoor.example>", "To: Carl Dunne", "Dear Carl,",
        "Vantor Composites makes glass and carbon fibre parts for boats and wind turbines. The business is owned by "
        "Hugh Calloway, who bought it in 2015.",
        "Short line without a stop", "next record",
        "a list item that is long enough to be wrapped if it were prose", "the next item"]
    # a Markdown hard break (two trailing spaces) and a finished sentence end the line
    assert prose_lines("Intro.\nA line that is long enough to look wrapped by a fill  \nBreaks here.")[1] == [
        "Intro.", "A line that is long enough to look wrapped by a fill", "Breaks here."]
    result = extract("Vantor Composites makes parts for boats and wind turbines. The business is owned by "
                     "Hugh\nCalloway, who bought it from its founders in 2015.")
    assert "Hugh Calloway" in types(result) and "Hugh" not in types(result), types(result)


def test_a_compound_title_is_about_the_part_the_text_names():
    from lightrag_prism.insert.extraction.spacy_extractor import prose_lines

    assert prose_lines("Vantor Composites - supplier record\n\nVantor Composites makes parts.")[0] == "Vantor Composites"
    assert prose_lines("# Grant award — Project Selkie\n\nThe panel funds Project Selkie.")[0] == "Project Selkie"
    # no part named (or one part): the whole title, as before
    assert prose_lines("Quarterly notes - spring\n\nThe board met twice.")[0] == "Quarterly notes - spring"
    assert prose_lines("Jean-Luc Picard\n\nPicard is a captain.")[0] == "Jean-Luc Picard"
