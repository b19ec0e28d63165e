"""The ICD-10-CM Index as a code-finding leg, routing as a prior, and the 2025 HCPCS release, on the real corpus."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from medrag.cli import main
from medrag.codes import HCPCS, ICD10CM, CodeFinder


@pytest.fixture(scope="module")
def finder(indexed_engine):
    """A finder without a query embedder: the test corpus's code documents carry no vectors."""
    with CodeFinder(indexed_engine) as code_finder:
        yield code_finder


def codes_of(search, system: str | None = None) -> list[str]:
    return [result.code for result in search.results if system is None or result.system == system]


def test_index_tables_load_with_the_fy2025_release(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        counts = dict(conn.execute(text(
            "SELECT e.index_name, count(*) FROM icd10cm_index_entry e JOIN release r ON r.id = e.release_id "
            "WHERE r.label = 'FY2025' GROUP BY e.index_name")).all())
        drug = conn.execute(text("SELECT poisoning_accidental, adverse_effect FROM v_icd10cm_drug "
                                 "WHERE release = 'FY2025' AND substance = 'Acetaminophen'")).one()
        neoplasm = conn.execute(text("SELECT malignant_primary, benign FROM v_icd10cm_neoplasm WHERE release = "
                                     "'FY2025' AND site = 'Neoplasm, neoplastic > abdomen, abdominal > cavity'")).one()
        fy2025_codes = conn.execute(text(
            "SELECT count(*) FILTER (WHERE c.billable) FROM icd10cm_code c JOIN release r ON r.id = c.release_id "
            "WHERE r.label = 'FY2025'")).scalar()
    assert set(counts) == {"diseases", "external_causes", "drugs", "neoplasms"} and counts["diseases"] == 81_024
    assert tuple(drug) == ("T39.1X1", "T39.1X5") and tuple(neoplasm) == ("C76.2", "D36.7")
    assert fy2025_codes > 70_000  # the order file's billable codes, FY2025 having no tabular XML offline


def test_screening_mammogram_encounter_finds_z12_31_first(finder) -> None:
    search = finder.find("encounter for a screening mammogram")
    assert codes_of(search)[0] == "Z12.31", search.trace
    assert ICD10CM in search.systems and HCPCS in search.systems


def test_stone_in_the_ureter_follows_the_index(finder) -> None:
    search = finder.find("stone in the ureter")
    assert codes_of(search, ICD10CM)[0] == "N20.1", search.trace
    assert any("Index: Calculus, calculi, calculous > ureter -> N20.1" in line for line in search.trace)


def test_drug_table_term_gets_its_seventh_character_explained(finder) -> None:
    search = finder.find("acetaminophen overdose, accidental")
    assert codes_of(search, ICD10CM)[0] == "T39.1X1A", search.trace
    assert any("Table of Drugs: Acetaminophen, Poisoning Accidental (unintentional) -> T39.1X1 (7th character A"
               in line for line in search.trace)


def test_wheelchair_still_finds_wheelchairs(finder) -> None:
    hcpcs = codes_of(finder.find("wheelchair"), HCPCS)
    assert hcpcs and all("K0001" <= code <= "K0108" or code.startswith("E1") for code in hcpcs[:3]), hcpcs
    assert any("K0001" <= code <= "K0108" for code in hcpcs)


def test_a_code_added_after_2019_is_found_in_2025(finder) -> None:
    search = finder.find("methylprednisolone sodium succinate injection")
    assert "J2919" in codes_of(search, HCPCS), search.trace  # added 2024-04-01


def test_a_code_terminated_before_2025_is_not_offered(finder) -> None:
    search = finder.find("J2920")  # methylprednisolone up to 40 mg, terminated 2024-03-31
    assert "J2920" not in codes_of(search)
    assert any("J2920 not in HCPCS 2025Q1" in line for line in search.trace)
    old = finder.find("J2920", release="2019")
    assert codes_of(old, HCPCS) == ["J2920"]


def test_routing_is_a_prior_not_a_filter(finder) -> None:
    search = finder.find("type 2 diabetes test strips")
    assert {ICD10CM, HCPCS} <= {result.system for result in search.results}
    assert search.systems == [ICD10CM, HCPCS]


def test_hcpcs_releases_diff_between_the_two_real_releases(indexed_settings, monkeypatch) -> None:
    monkeypatch.setenv("DATABASE_URL", indexed_settings.database_url)
    monkeypatch.setenv("MEDRAG_HOME", str(indexed_settings.home))
    outcome = CliRunner().invoke(main, ["releases", "diff", "hcpcs", "2019", "2025Q1", "--json"])
    assert outcome.exit_code == 0, outcome.output
    rows = [json.loads(line) for line in outcome.stdout.splitlines() if line.strip()]
    by_change: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_change.setdefault(row["change"], {})[row["code"]] = row
    added, removed, changed = by_change["added"], by_change["removed"], by_change["changed"]
    assert len(added) > 1000 and len(removed) > 100 and len(changed) > 1000, {k: len(v) for k, v in by_change.items()}
    assert "J2919" in added  # methylprednisolone sodium succinate 5 mg, added 2024-04-01
    # kept in 2025 with the termination date it got
    assert str(changed["J2920"]["new_termination_date"]) == "2024-03-31"
    assert changed["J2920"]["old_termination_date"] is None
    assert next(iter(removed)) not in added
