"""The code finder's analysis of a term in a real PostgreSQL: its classification (medrag_classify_code_term, rendered
from medrag/codes/classify.py) and its concepts (medrag_code_concepts and medrag_negated_words, from terms.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS, classify
from medrag.codes.terms import SYNONYM, TYPED, analyze_term
from medrag.core import tuning
from medrag.core.synonyms import synonym_rows
from medrag.core.words import words


@pytest.mark.parametrize(("term", "systems"), [
    ("diabetes", [ICD10CM]),
    ("rheumatoid arthritis", [ICD10CM]),  # a disease suffix
    ("wheelchair", [HCPCS]),
    ("ondansetron 4 mg", [HCPCS]),  # a drug with a dose
    ("ambulance mileage", [HCPCS]),
    ("diabetic shoes", [HCPCS]),  # the condition names what the item is for
    ("zofran", [HCPCS]),  # a brand name from the synonym table
    ("asdfghjkl", list(SYSTEMS)),  # no signal: search everything
])
def test_terms_are_classified_by_their_signals(engine, term, systems) -> None:
    scores = classify(engine, term).scores
    heard = [system for system in SYSTEMS if scores[system] >= tuning.value("classify_threshold")] or list(SYSTEMS)
    assert sorted(heard) == sorted(systems)


def test_the_finder_matches_its_part_of_the_one_synonym_table(engine) -> None:
    """medrag_finder_synonym: the query terms, plus the any-case document abbreviations no query term defines."""
    with engine.connect() as conn:
        def matches(words: list[str]) -> list[tuple]:
            return [tuple(row) for row in conn.execute(
                text("SELECT term, start_at, end_at FROM medrag_code_synonym_matches(:w)"), {"w": words})]

        assert matches("my heart attack and copd".split()) == [("heart attack", 1, 3), ("copd", 4, 5)]
        assert matches(["behind-the-ear", "hearing", "aid"]) == [("behind the ear", 0, 1)]  # a hyphenated word
        # a phrase of two or more keyed words matches by its stems across stop words: the longest match wins, and a
        # stop word it spans that is a term of its own ("both") is matched too; a negation ends the phrase
        assert matches("history of a blood clot in the lungs".split()) == [("blood clot in the lung", 3, 8)]
        assert sorted(matches("ringing in both ears".split())) == [("both", 2, 3), ("ringing in the ears", 0, 4)]
        assert matches("blood clot not in the lung".split()) == [("blood clot", 0, 2), ("lung", 5, 6)]
        assert matches(["stomachs"]) == []  # a one-word term only as written
        entries = conn.execute(text("SELECT medrag_code_synonyms()")).scalar_one()
        stored = conn.execute(text("SELECT count(*) FROM medrag_synonym")).scalar_one()
    assert stored == len(synonym_rows())
    assert entries["zofran"] == {"expansions": ["ondansetron"], "kind": "brand", "systems": [HCPCS]}
    assert entries["esrd"]["systems"] == [ICD10CM, HCPCS]  # the query term's own row, not the HCPCS abbreviation's
    assert entries["tens"]["systems"] == []  # a document abbreviation no query term defines, lower-cased
    assert "aids" not in entries  # an exact-case abbreviation (AIDS) is an ordinary word in a lower-cased term


def test_the_search_expands_no_abbreviation_that_is_also_an_ordinary_word(engine) -> None:
    with engine.connect() as conn:
        terms = set(conn.execute(text("SELECT term FROM medrag_search_synonym")).scalars())
    # the search lower-cases the query: "hearing aids", "pap smear" must not bring AIDS's or PAP's wording
    assert not terms & {"aids", "pap", "rad"}
    assert {"cpap", "dme", "behind the ear", "both ears", "a fib"} <= terms


def test_multi_intent_term_scores_both_systems(engine) -> None:
    result, query = analyze_term(engine, "diabetes a1c test strips")
    assert result.scores[ICD10CM] >= 0.3 and result.scores[HCPCS] >= 0.3
    # a word that signals one system alone is that system's concept (this database holds no Index, which could file
    # a code under a service word and another word of the term)
    assert {concept.text for concept in query.concepts if concept.systems == {ICD10CM}} == {"diabetes"}
    assert {concept.text for concept in query.concepts if concept.systems == {HCPCS}} == {"test", "strips"}
    assert "diagnosis word" in result.describe() and "supply" in result.describe()


def test_literal_codes_are_recognized_per_system(engine) -> None:
    def literal_codes(term: str) -> dict[str, tuple[str, ...]]:
        return classify(engine, term).literal_codes

    assert literal_codes("E0601") == {HCPCS: ("E0601",), ICD10CM: ("E06.01",)}
    assert literal_codes("codes e11.621 and E11621") == {ICD10CM: ("E11.621",)}
    assert literal_codes("vitamin b12 shot") == {}  # a nutrient's name, searched as a word
    assert literal_codes("b12 shot") == {ICD10CM: ("B12",)}  # looked up, but still searched as a word
    assert classify(engine, "vitamin b12 shot E0601 E1165").text == "vitamin b12 shot"
    assert literal_codes("a1c test") == {}
    assert literal_codes("E0601 with the KX modifier") == {HCPCS: ("E0601", "KX"), ICD10CM: ("E06.01",)}
    assert classify(engine, "KX modifier").wants_modifiers


def test_a_terms_words_scores_and_doses(engine) -> None:
    """Words as Python splits them (medrag_words_of), a dose as a HCPCS signal, scores saturating as 1 - e^-w."""
    result = classify(engine, "What is the HCPCS code for Zofran 4 MG, it’s for nausea?")
    assert result.searched == "Zofran 4 MG, it’s for nausea"
    assert result.words == ("zofran", "4", "mg", "it's", "for", "nausea")
    assert [signal.describe() for signal in result.signals] == [
        'named code set "HCPCS"', 'diagnosis word "nausea"', 'dose "4 mg"', 'synonym "zofran"']
    assert result.scores == {ICD10CM: 0.699, HCPCS: 0.996}  # 1 - e^-1.2; 1 - e^-(3 + 1.5 + 1)
    assert classify(engine, "stroke, not further specified").unspecified == ("not further specified",)
    assert classify(engine, "stroke, not further specified").searched == "stroke, unspecified"
    # a term that asks for no code is trimmed all the same
    assert classify(engine, "power wheelchair for home use?").searched == "power wheelchair for home use"
    # an accented letter is a letter (PostgreSQL and Python split alike)
    assert classify(engine, "Sjögren's syndrome, Guillain-Barré").words == ("sjögren's", "syndrome", "guillain-barré")
    assert words("Sjögren's syndrome, Guillain-Barré") == ["sjögren's", "syndrome", "guillain-barré"]


@pytest.mark.parametrize(("term", "encounter", "searched"), [
    ("colles fracture of the left wrist, first visit", "initial", "colles fracture of the left wrist"),
    ("dog bite of the hand, follow-up visit", "subsequent", "dog bite of the hand"),
    ("sequela of a burn of the hand", "sequela", "sequela of a burn of the hand"),  # a word of codes too
    ("follow-up inpatient consultation", None, "follow-up inpatient consultation"),  # a HCPCS service
])
def test_the_visit_a_term_names_is_its_encounter(engine, term, encounter, searched) -> None:
    classification = classify(engine, term)
    assert (classification.encounter, classification.searched) == (encounter, searched)


@pytest.mark.parametrize(("term", "negated"), [
    ("fatty liver not caused by alcohol", {"caused", "by", "alcohol"}),
    ("right shoulder hurts, no injury", {"injury"}),
    ("concussion but did not black out, first visit", {"black", "out"}),  # the clause ends at the comma
    ("patient didn't fall and has a hip fracture", {"fall"}),  # and "and" starts another clause
    ("no pain in the left knee, pain in the right knee", {"left"}),  # a word said outside a negation is affirmed
    ("vomiting without nausea", set()),  # codes say "without" too: matched as written
    ("non-small cell lung cancer", set()),
    ("fatty liver, not elsewhere classified", set()),  # the Tabular's filler, not a negation
    ("anemia not otherwise specified, not due to iron", {"due", "to", "iron"}),
    ("anemia from not enough iron", set()),  # too little of something is a deficiency, not an absence
    ("not sufficient vitamin d, no rickets", {"rickets"}),
])
def test_negated_words_reach_to_the_end_of_their_clause(engine, term, negated) -> None:
    with engine.connect() as conn:
        assert set(conn.execute(text("SELECT medrag_negated_words(:term)"), {"term": term}).scalar_one()) == negated


def test_a_terms_concepts_group_synonym_phrases_and_mark_focus_and_negation(engine) -> None:
    """"copd" is a table term (one concept, its expansion explaining a code's words); "both" is a stop word the table
    gives a meaning; in a multi-intent term a word that signals one system is that system's alone."""
    with engine.connect() as conn:
        classification, query = analyze_term(conn, "copd exacerbation in both lungs, not caused by smoking")
        multi, multi_query = analyze_term(conn, "diabetes a1c test strips")
    assert classification == classify(engine, "copd exacerbation in both lungs, not caused by smoking")
    assert query.text == "copd exacerbation in both lungs, not caused by smoking" and multi.scores[HCPCS] > 0.3
    by_text = {concept.text: concept for concept in query.concepts}
    assert list(by_text) == ["copd", "exacerbation", "both", "lungs", "caused", "smoking"]
    assert "obstruct" in by_text["copd"].explains and by_text["copd"].wordings[0].origin == TYPED
    assert by_text["both"].qualifier and [wording.origin for wording in by_text["both"].wordings] == [SYNONYM]
    assert by_text["caused"].negated and by_text["smoking"].negated and not by_text["lungs"].negated
    focus = {concept.text: concept.systems for concept in multi_query.concepts}
    assert focus["diabetes"] == {ICD10CM} and focus["strips"] == {HCPCS} and focus["a1c"] == {ICD10CM, HCPCS}
