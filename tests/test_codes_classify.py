"""The code finder's classification of a term (medrag_classify_code_term, rendered from medrag/codes/classify.py),
run in a real PostgreSQL."""

from __future__ import annotations

import pytest

from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS, classify


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
    assert sorted(classify(engine, term).systems()) == sorted(systems)


def test_multi_intent_term_scores_both_systems(engine) -> None:
    result = classify(engine, "diabetes a1c test strips")
    assert result.scores[ICD10CM] >= 0.3 and result.scores[HCPCS] >= 0.3
    assert result.exclusive_words(ICD10CM) == {"diabetes"}
    assert result.exclusive_words(HCPCS) == {"test", "strips"}
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


@pytest.mark.parametrize(("term", "encounter", "searched"), [
    ("colles fracture of the left wrist, first visit", "initial", "colles fracture of the left wrist"),
    ("dog bite of the hand, follow-up visit", "subsequent", "dog bite of the hand"),
    ("sequela of a burn of the hand", "sequela", "sequela of a burn of the hand"),  # a word of codes too
    ("follow-up inpatient consultation", None, "follow-up inpatient consultation"),  # a HCPCS service
])
def test_the_visit_a_term_names_is_its_encounter(engine, term, encounter, searched) -> None:
    classification = classify(engine, term)
    assert (classification.encounter, classification.searched) == (encounter, searched)
