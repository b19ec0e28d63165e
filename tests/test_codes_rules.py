"""The code finder's rules without a database: the synonym table, input checks, the dev-set format."""

from __future__ import annotations

import json

import pytest

from medrag.codes.classify import HCPCS, ICD10CM
from medrag.codes.evaluation import DevSetError, read_dev_set
from medrag.codes.finder import CodeQueryError, clean_term
from medrag.core.data import DataFileError
from medrag.core.synonyms import parse_synonyms, synonym_rows

HEADER = "term,expansion,kind,system,documents\n"


def test_packaged_synonym_table_is_well_formed() -> None:
    rows = synonym_rows()
    query_terms = {row.term: row for row in rows if not row.documents}
    assert len(query_terms) >= 100
    for term in ("dme", "cpap", "copd", "esrd"):
        assert query_terms[term].kind == "abbreviation"
    assert [row.expansion for row in rows if row.term == "zofran"] == ["ondansetron"]
    assert query_terms["zofran"].systems == (HCPCS,)
    assert query_terms["esrd"].systems == (ICD10CM, HCPCS)
    assert {row.documents for row in rows} == {"", "any_case", "exact"}


@pytest.mark.parametrize(("csv_text", "message"), [
    ("term,expansion,kind,system\n", "header must be"),
    (HEADER + "COPD,chronic obstructive pulmonary disease,abbreviation,ICD-10-CM,\n", "lower-case words"),
    (HEADER + "copd,,abbreviation,ICD-10-CM,\n", "needs an expansion"),
    (HEADER + "copd,copd,abbreviation,ICD-10-CM,\n", "needs an expansion"),
    (HEADER + "copd,chronic bronchitis,acronym,ICD-10-CM,\n", "kind 'acronym'"),
    (HEADER + "copd,chronic bronchitis,abbreviation,CPT,\n", "system 'CPT'"),
    (HEADER + "copd,emphysema,abbreviation,ICD-10-CM,\ncopd,emphysema,abbreviation,ICD-10-CM,\n", "listed twice"),
    (HEADER + "copd,emphysema,abbreviation,ICD-10-CM,\ncopd,bronchitis,lay,ICD-10-CM,\n", "another kind"),
    (HEADER + "CPAP,continuous positive airway pressure,abbreviation,,sometimes\n", "documents 'sometimes'"),
    (HEADER + "CPAP,cpap,abbreviation,,any_case\n", "needs an expansion"),
])
def test_malformed_synonym_tables_are_rejected(csv_text, message) -> None:
    with pytest.raises(DataFileError, match=message):
        parse_synonyms(csv_text, "test.csv")


def test_a_document_abbreviation_keeps_its_case() -> None:
    rows = parse_synonyms(HEADER + "CPAP,continuous positive airway pressure,abbreviation,,any_case\n"
                          "copd,chronic obstructive pulmonary disease,abbreviation,ICD-10-CM,\n")
    assert [(row.term, row.documents) for row in rows] == [("CPAP", "any_case"), ("copd", "")]


def test_the_python_door_cleans_a_term_and_refuses_control_characters() -> None:
    assert clean_term("  type 2   diabetes ") == "type 2 diabetes"
    assert clean_term("") == ""  # an empty term is for medrag_check_code_query to refuse, with its message
    with pytest.raises(CodeQueryError, match="control characters"):
        clean_term("oxygen\x00")


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
