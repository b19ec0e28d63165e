"""The Index's word forms: words one Index title lists as forms of one word, on CDC's real FY2025 index files."""

from __future__ import annotations

from pathlib import Path

import pytest

from medrag.sources.icd10cm.index import index_member_kind, parse_index_files
from medrag.sources.icd10cm.word_forms import same_word, title_word_forms, word_form_rows


@pytest.fixture(scope="module")
def forms(cms_dir: Path) -> set[tuple[str, str]]:
    fy2025 = cms_dir / "icd10cm" / "fy2025"
    files = {path.name: path for path in fy2025.iterdir() if index_member_kind(path.name)}
    return {(row["word"], row["form"]) for row in word_form_rows(parse_index_files(files))}


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("pancreas", "pancreatic", True),  # the adjective's ending
    ("esophagus", "esophageal", True),
    ("calculus", "calculi", True),  # a Latin plural
    ("testicle", "testis", True),
    ("eye", "eyelid", False),  # too short to tell: another word
    ("cervical", "cervicothoracic", False),  # a second word run into it
    ("herpes", "herpesvirus", False),
    ("pleura", "pleuritis", False),  # an inflammation of the organ
    ("abruption", "placenta", False),
    ("fracture", "fracture", False),
])
def test_two_words_are_one_word_when_spelled_alike_but_for_short_endings(first, second, expected) -> None:
    assert same_word(first, second) is expected
    assert same_word(second, first) is expected


def test_a_titles_forms_pair_through_a_third_and_its_qualifiers_stay_apart() -> None:
    assert set(title_word_forms("Testicle, testicular, testis")) == {
        (a, b) for a in ("testicle", "testicular", "testis") for b in ("testicle", "testicular", "testis") if a != b}
    assert title_word_forms("Eye, eyeball, eyelid") == []
    assert title_word_forms("Column, spinal, vertebral") == []
    assert title_word_forms("Pancreatitis") == []
    assert title_word_forms("Fracture, traumatic > ankle") == []  # only a list of single words


def test_the_fy2025_index_pairs_organs_with_their_adjectives_but_not_the_drug_tables_chemicals(forms) -> None:
    for pair in [("pancreatic", "pancreas"), ("pancreas", "pancreatic"), ("esophageal", "esophagus"),
                 ("testicular", "testis"), ("ovarian", "ovary"), ("cervical", "cervix")]:
        assert pair in forms
    assert ("sulfur", "sulfuryl") not in forms  # "Sulfur, sulfurous, sulfuryl" in the Table of Drugs
    assert ("eye", "eyelid") not in forms and ("pleura", "pleuritis") not in forms
    assert all((form, word) in forms for word, form in forms)
    assert 900 < len(forms) < 1500
