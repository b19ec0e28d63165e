"""The code finder's rules without a database: the synonym table, input checks, the dev-set format."""

from __future__ import annotations

import json

import pytest

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.evaluation import DevSetError, read_dev_set
from medrag.codes.finder import CodeQueryError, normalize_systems, validate_term
from medrag.codes.synonyms import SynonymDataError, load_clinical_synonyms, parse_clinical_synonyms

HEADER = "term,expansion,kind,system\n"


def test_packaged_synonym_table_is_well_formed() -> None:
    table = load_clinical_synonyms()
    assert len(table) >= 100
    for term in ("dme", "cpap", "copd", "esrd"):
        assert table.get(term).kind == "abbreviation"
    assert table.get("zofran").expansions == ("ondansetron",)
    assert table.get("zofran").systems == (HCPCS,)
    assert table.get("esrd").systems == (ICD10CM, HCPCS)
    matches = table.matches("my heart attack and copd".split())
    assert [(match.phrase, match.start, match.end) for match in matches] == [("heart attack", 1, 3), ("copd", 4, 5)]
    hyphenated = table.matches(["behind-the-ear", "hearing", "aid"])  # a hyphenated word is its words apart
    assert [(match.entry.term, match.start, match.end) for match in hyphenated] == [("behind the ear", 0, 1)]


@pytest.mark.parametrize(("csv_text", "message"), [
    ("term,expansion\n", "header must be"),
    (HEADER + "COPD,chronic obstructive pulmonary disease,abbreviation,ICD-10-CM\n", "lower-case words"),
    (HEADER + "copd,,abbreviation,ICD-10-CM\n", "needs an expansion"),
    (HEADER + "copd,copd,abbreviation,ICD-10-CM\n", "needs an expansion"),
    (HEADER + "copd,chronic bronchitis,acronym,ICD-10-CM\n", "kind 'acronym'"),
    (HEADER + "copd,chronic bronchitis,abbreviation,CPT\n", "system 'CPT'"),
    (HEADER + "copd,emphysema,abbreviation,ICD-10-CM\ncopd,emphysema,abbreviation,ICD-10-CM\n", "listed twice"),
    (HEADER + "copd,emphysema,abbreviation,ICD-10-CM\ncopd,bronchitis,lay,ICD-10-CM\n", "another kind"),
])
def test_malformed_synonym_tables_are_rejected(csv_text, message) -> None:
    with pytest.raises(SynonymDataError, match=message):
        parse_clinical_synonyms(csv_text, "test.csv")


def test_bad_terms_and_systems_are_user_errors() -> None:
    assert validate_term("  type 2   diabetes ") == "type 2 diabetes"
    for bad in ("", "   ", "x" * 501, "oxygen\x00"):
        with pytest.raises(CodeQueryError):
            validate_term(bad)
    assert normalize_systems(["icd10cm", "HCPCS", "ICD-10-CM"]) == [ICD10CM, HCPCS]
    with pytest.raises(CodeQueryError, match="unknown code system"):
        normalize_systems(["CPT"])


def test_dev_set_format_is_checked(tmp_path) -> None:
    path = tmp_path / "terms.jsonl"
    path.write_text(json.dumps({"term": "walker", "system": HCPCS, "expected": ["E0130"]}) + "\n\n")
    assert read_dev_set(path)[0].expected == ("E0130",)
    for line, message in [("not json", "not JSON"), ('{"term": "", "system": "HCPCS", "expected": ["x"]}', "term"),
                          ('{"term": "a", "system": "HCPCS", "expected": []}', "expected"), ("[1]", "object")]:
        path.write_text(line + "\n")
        with pytest.raises(DevSetError, match=message):
            read_dev_set(path)
    with pytest.raises(DevSetError, match="not found"):
        read_dev_set(tmp_path / "missing.jsonl")
