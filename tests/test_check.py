"""The claim-line check on the real corpus: every rule, one line and a file from the CLI, psql, and the eval sets."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from medrag.check.checker import check_lines, line_verdict
from medrag.check.evaluation import evaluate, read_check_set
from medrag.core.db import libpq_url
from medrag.ingest.copy import copy_rows
from medrag.sources.mcd.release import MCD_TABLES, read_table

ROOT = Path(__file__).resolve().parent.parent


def findings(result: dict, rule: str) -> list[dict]:
    return [finding for finding in result["findings"] if finding["rule"] == rule]


def test_a_terminated_code_is_an_error_with_the_codes_added_for_the_same_drug(indexed_engine) -> None:
    [result] = check_lines(indexed_engine, [{"dos": "2025-02-10", "hcpcs": "J2920"}])
    [finding] = findings(result, "hcpcs_valid")
    assert finding["verdict"] == "error"
    assert finding["message"] == "J2920 ended 2024-03-31, before the date of service"
    assert finding["basis"] == {"source": "hcpcs", "release": "2025Q1", "code": "J2920", "action": "N",
                                "period": "2025-01-01 to 2025-03-31", "effective": "1982-01-01",
                                "termination": "2024-03-31"}
    # the file states no replacement (no cross-reference), so J2919 is a candidate, never a replacement
    assert [(item["code"], item["relation"]) for item in finding["candidates"]] == [("J2919", "candidate")]


def test_the_candidates_rule_reads_its_numbers_from_the_settings(indexed_engine) -> None:
    """medrag_settings(): a session's override changes what counts as a candidate."""
    line = json.dumps([{"dos": "2025-02-10", "hcpcs": "J2920"}])
    with indexed_engine.connect() as conn:
        assert conn.execute(text("SELECT check_candidate_share, check_candidate_days FROM medrag_settings()")
                            ).one() == (Decimal("0.5"), 92)
        conn.execute(text("SET medrag.check_candidate_share = 1.01"))
        [result] = conn.execute(text("SELECT medrag_check_lines(CAST(:l AS jsonb))"), {"l": line}).scalar_one()
        conn.execute(text("RESET medrag.check_candidate_share"))
    [finding] = findings(result, "hcpcs_valid")
    assert finding["verdict"] == "error" and "candidates" not in finding


def test_the_release_for_the_date_decides_and_a_date_no_release_covers_is_not_checked(indexed_engine) -> None:
    results = check_lines(indexed_engine, [
        {"dos": "2019-03-01", "hcpcs": "C8907"}, {"dos": "2025-01-02", "hcpcs": "A9615"},
        {"dos": "2024-06-01", "hcpcs": "E0601", "dx": "G47.33"}])
    assert line_verdict(results[0], "hcpcs_valid") == "error"  # ended 2018-12-31, in the 2019 file
    assert findings(results[0], "hcpcs_valid")[0]["basis"]["release"] == "2019"
    assert line_verdict(results[1], "hcpcs_valid") == "ok"  # added 2025-01-01
    [uncovered] = findings(results[2], "hcpcs_valid")
    assert uncovered["verdict"] == "not checked"
    assert uncovered["message"].endswith("loaded: 2019 (2019-01-01 to 2019-12-31), 2025Q1 (2025-01-01 to 2025-03-31)")
    assert line_verdict(results[2], "icd10cm_valid") == "not checked"  # FY2024 is not loaded either


@pytest.mark.parametrize(("dos", "dx", "verdict", "message"), [
    ("2025-03-01", "M54.5", "error", "M54.5 is a header in FY2025, not billable; code one of the codes below it: "
                                     "M54.50, M54.51, M54.59"),
    ("2021-03-01", "M545", "ok", "M54.5 is billable in FY2021"),
    ("2025-11-03", "S52.532", "error", "S52.532 needs a 7th character, in FY2026: S52.532A, S52.532B"),
    ("2026-02-01", "W19", "error", "W19 needs a 7th character, after X placeholders, in FY2026: W19.XXXA, "
                                   "W19.XXXD, W19.XXXS"),
    ("2025-12-01", "T36.01A", "error", "T36.01A lacks its X placeholder: T36.0X1A in FY2026"),
    ("2025-10-15", "S30.1XXA", "error", "S30.1XXA is not in ICD-10-CM FY2026 (it is in FY2021, FY2025)"),
    ("2025-09-15", "E11.A", "error", "E11.A is not in ICD-10-CM FY2025 (it is in FY2026)"),
    ("2023-05-01", "G47.33", "not checked", "not checked: no ICD-10-CM FY2023 release is loaded (2022-10-01 to "
                                            "2023-09-30); loaded: FY2021"),
])
def test_each_diagnosis_is_checked_in_its_fiscal_years_release(indexed_engine, dos, dx, verdict, message) -> None:
    [result] = check_lines(indexed_engine, [{"dos": dos, "dx": dx}])
    [finding] = findings(result, "icd10cm_valid")
    assert finding["verdict"] == verdict
    assert finding["message"].startswith(message)


def test_modifiers_and_coverage_to_review(indexed_engine) -> None:
    [result] = check_lines(indexed_engine, [
        {"dos": "2025-02-01", "hcpcs": "E0601", "modifiers": ["KX", "JG", "ZZ", "59"], "dx": ["G47.33"],
         "state": "CA"}])
    assert [(f["verdict"], f["message"].split(" (")[0]) for f in findings(result, "modifier_valid")] == [
        ("ok", "modifier KX is valid on 2025-02-01"),
        ("error", "modifier JG ended 2024-12-31, before the date of service"),
        ("error", "modifier ZZ is not in HCPCS 2025Q1"),
        ("not checked", "not checked: 59 is a CPT modifier")]
    [lcd] = findings(result, "lcd_coverage")
    assert lcd["verdict"] == "warning" and lcd["basis"]["id"] == "L33718"
    assert lcd["basis"]["url"].endswith("LCDId=33718")
    assert findings(result, "article_dx_support")[0]["message"] == "not checked: no Article data loaded"
    [ncd] = findings(check_lines(indexed_engine, [{"dos": "2025-03-01", "hcpcs": "E0652"}])[0], "ncd_coverage")
    assert (ncd["verdict"], ncd["basis"]["id"]) == ("warning", "NCD 280.6")


def test_the_article_rule_reads_the_articles_covered_diagnoses(indexed_engine, tmp_path) -> None:
    """Article tables written by the test in the export's own column layout, loaded by the MCD reader, rolled back."""
    members = {
        "article_x_hcpc_code": [{"article_id": "52467", "article_version": "3", "hcpc_code_id": "E0601",
                                 "hcpc_code_version": "1", "hcpc_code_group": "1", "range": "", "last_updated": "",
                                 "long_description": "CPAP device", "short_description": "Cpap"}],
        "article_x_icd10_covered": [{"article_id": "52467", "article_version": "3", "icd10_code_id": "G47.33",
                                     "icd10_code_version": "1", "icd10_covered_group": "1", "range": "",
                                     "last_updated": "", "sort_order": "1", "description": "OSA", "asterisk": ""}],
    }
    with indexed_engine.connect() as conn, conn.begin() as transaction:
        release_id = conn.execute(text("SELECT id FROM release WHERE source = 'mcd' AND is_current")).scalar_one()
        for member, rows in members.items():
            spec = MCD_TABLES[f"mcd_{member}"]
            path = tmp_path / f"{member}.csv"
            with path.open("w", newline="", encoding="cp1252") as handle:
                writer = csv.DictWriter(handle, fieldnames=[name for name, _ in spec.columns])
                writer.writeheader()
                writer.writerows(rows)
            copy_rows(conn, spec.table, spec.columns, read_table(path, spec), constants={"release_id": release_id})
        results = conn.execute(text("SELECT medrag_check_lines(CAST(:l AS jsonb))"), {"l": json.dumps([
            {"dos": "2025-03-01", "hcpcs": "E0601", "dx": ["I10", "G47.33"]},
            {"dos": "2025-03-01", "hcpcs": "E0601", "dx": ["I10"]},
            {"dos": "2025-03-01", "hcpcs": "K0001", "dx": ["I10"]}])}).scalar_one()
        transaction.rollback()
    supported, unsupported, unlisted = (findings(result, "article_dx_support")[0] for result in results)
    assert (supported["verdict"], supported["message"]) == ("ok", "Article A52467 covers E0601 for G47.33")
    assert supported["basis"]["id"] == "A52467"
    assert unsupported["verdict"] == "error"
    assert (unlisted["verdict"], unlisted["message"]) == ("not checked", "not checked: no loaded Article lists K0001")


def test_one_line_from_the_cli_exits_1_on_an_error_and_0_without(cli) -> None:
    code, out, _ = cli("check", "--dos", "2025-02-10", "--hcpcs", "J2920", "--dx", "M54.5")
    assert code == 1
    hcpcs_line = next(line for line in out.splitlines() if "hcpcs_valid" in line)
    assert hcpcs_line.startswith("error ") and "candidate J2919 (from 2024-04-01" in hcpcs_line
    assert "<- hcpcs 2025Q1 J2920 [1982-01-01 .. 2024-03-31]" in out
    assert "M54.50, M54.51, M54.59" in out
    code, out, _ = cli("check", "--dos", "2025-03-01", "--hcpcs", "E0601", "--modifier", "KX", "--dx", "G47.33",
                       "--state", "CA", "--json")
    assert code == 0
    printed = json.loads(out)
    assert printed["errors"] == 0 and {f["rule"] for f in printed["findings"]} >= {"hcpcs_valid", "lcd_coverage"}
    code, _, err = cli("check", "--hcpcs", "E0601")
    assert code == 2 and "give a claim FILE, or --dos with --hcpcs and/or --dx" in err


def test_a_file_streams_in_batches_and_a_bad_line_is_a_finding_not_a_stop(cli, tmp_path) -> None:
    path = tmp_path / "claims.csv"
    good = [f"g{n},2025-03-01,E0601,KX,G47.33;M54.50,CA" for n in range(1199)]
    bad = ["b1,2025-02-30,E0601,,,", "b2,2025-03-01,E06O1,,,", "b3,2025-03-01,E0601,,,CA,extra"]
    path.write_text("line_id,dos,hcpcs,modifiers,dx,state\n" + "\n".join(good[:600] + bad + good[600:]) + "\n")
    code, out, err = cli("check", str(path), "--format", "csv")
    assert code == 1
    rows = list(csv.DictReader(out.splitlines()))
    # the line with a cell too many is known by its number in the file
    assert {row["line_id"] for row in rows} == {f"g{n}" for n in range(1199)} | {"b1", "b2", "603"}
    errors = {(row["line_id"], row["rule"], row["message"]) for row in rows if row["verdict"] == "error"}
    assert errors == {("b1", "date_of_service", "date of service '2025-02-30' is not a date (YYYY-MM-DD)"),
                      ("b2", "hcpcs_valid", "'E06O1' is not a HCPCS Level II code (a letter A-V and four digits)"),
                      ("603", "input", "line 603 has 7 cells; the header names 6")}
    assert "check: 1,202/1,202 lines" in err  # the count, with rate and ETA on the way
    code, out, _ = cli("check", str(path))
    assert code == 1 and out.startswith("1,202 line(s), 3 with errors")
    jsonl = tmp_path / "claims.jsonl"
    jsonl.write_text(json.dumps({"line_id": "j1", "dos": "2025-03-01", "hcpcs": "E0601"}) + "\n{not json\n")
    code, out, _ = cli("check", str(jsonl), "--json")
    printed = json.loads(out)
    assert code == 1 and printed["summary"]["lines"] == 2 and printed["summary"]["lines_with_errors"] == 1
    assert printed["lines"][1]["findings"][0]["message"].startswith("line 2 is not JSON")


@pytest.mark.parametrize(("content", "message"), [
    ("when,code\n2025-03-01,E0601\n", "the header must name dos"),
    (b"line_id,dos,hcpcs\n1,2025-03-01,E0601 \xff\n", "not UTF-8 text"),
])
def test_a_file_that_cannot_be_read_is_one_line(cli, tmp_path, content, message) -> None:
    path = tmp_path / "claims.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, _, err = cli("check", str(path))
    assert code == 2 and message in err and "Traceback" not in err


def test_psql_reader_gets_the_same_findings(indexed_engine, indexed_settings) -> None:
    line = [{"dos": "2025-02-10", "hcpcs": "J2920", "dx": "M54.5", "state": "CA"}]
    url = libpq_url(indexed_settings.database_url).replace("postgres@", "medrag_reader@")
    with psycopg.connect(url) as conn:
        as_reader = conn.execute("SELECT medrag_check_lines(%s::jsonb)", (json.dumps(line),)).fetchone()[0]
    assert as_reader == check_lines(indexed_engine, line)


@pytest.mark.parametrize("name", ["check_dev", "check_holdout"])
def test_the_eval_sets_are_met_on_every_rule(indexed_engine, name) -> None:
    report = evaluate(indexed_engine, read_check_set(ROOT / "eval" / f"{name}.jsonl"))
    assert report["misses"] == []
    assert all(figures["accuracy"] == 1.0 for figures in report["by_rule"].values())
