"""The code finder's rules without a database: the synonym table, tiers, negation, the dev-set format."""

from __future__ import annotations

import json

import pytest

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.consolidate import MIN_SCORE, TIERS, Candidate, CandidatePool, calibration, ranked
from medrag.codes.evaluation import DevSetError, read_dev_set
from medrag.codes.finder import CodeQueryError, normalize_systems, validate_term
from medrag.codes.plan import CodeRow, LegHit
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


def _icd_row(code: str, description: str, *, billable: bool = True, children: bool = False) -> CodeRow:
    return CodeRow(ICD10CM, code, description, billable, None, None, "diagnosis", children)


def test_tiers_and_header_deduplication() -> None:
    pool = CandidatePool()
    rows = {"E11": _icd_row("E11", "Type 2 diabetes mellitus", billable=False, children=True),
            "E11.9": _icd_row("E11.9", "Type 2 diabetes mellitus without complications"),
            "E10.9": _icd_row("E10.9", "Type 1 diabetes mellitus without complications")}
    for code in rows:
        pool.add(ICD10CM, code, LegHit("words", 1, 1.0))
    pool.add(ICD10CM, "X99.9", LegHit("words", 2, 1.0))  # not in the tables: never becomes a candidate
    pool.attach(ICD10CM, rows)
    scores = {"E11": 0.9, "E11.9": 0.81, "E10.9": 0.29}
    for candidate in pool.of(ICD10CM):
        candidate.score = scores[candidate.row.code]
    assert len(pool) == 3
    assert [candidate.row.code for candidate in ranked(pool, ICD10CM)] == ["E11.9"]  # header covered, E10.9 < 0.3
    # Tiers follow the calibrated confidence; a code below the listing score has none.
    calibrated = calibration()
    for score, behind in ((0.95, 0.0), (0.81, 0.0), (0.6, 0.0), (0.6, 0.3), (0.29, 0.0)):
        candidate = Candidate(rows["E11.9"], score=score, behind=behind)
        probability = calibrated.probability(score, behind)
        expected = None if score < MIN_SCORE else next(name for floor, name in TIERS if probability > floor)
        assert candidate.tier == expected and candidate.confidence == round(probability, 3)
    assert Candidate(rows["E11.9"], score=0.95).confidence > Candidate(rows["E11.9"], score=0.95, behind=0.1).confidence
    assert Candidate(rows["E11.9"], score=0.5, exact=True).confidence == 1.0


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
