"""The claim-line check's eval sets agree with the release files, read here without medrag's loaders or SQL.

Each expected verdict of eval/check_dev.jsonl and eval/check_holdout.jsonl is worked out again from the raw files
of the corpus beside the checkout (../shared/cms): the HCPCS fixed-width records (added and termination dates,
columns 269-276 and 285-292 of the record layout), the ICD-10-CM order files (FY2021, FY2025: the billable flag),
the April 2026 tabular XML (FY2026: a leaf <diag> is billable; one under a sevenChrDef takes a 7th character, X
placeholders filling the 6 places before it) and the MCD CSVs (the LCDs listing a code, the NCD narratives naming
one). So the sets are checked against the files, not against what the check itself says.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import zipfile
from functools import cache
from pathlib import Path

import pytest
from conftest import CMS_DIR as CMS  # tests/ is on sys.path: rootdir conftest, no __init__.py
from defusedxml import ElementTree

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
SETS = [ROOT / "eval" / "check_dev.jsonl", ROOT / "eval" / "check_holdout.jsonl"]
HCPCS_FILES = {"2019": ("hcpcs/2019-Alpha-Numeric-HCPCS-File.zip", "HCPC2019_CONTR_ANWEB.txt"),
               "2025Q1": ("hcpcs/january-2025-alpha-numeric-hcpcs-file.zip", "HCPC2025_JAN_ANWEB_12172024.txt")}
HCPCS_PERIODS = {"2019": (dt.date(2019, 1, 1), dt.date(2019, 12, 31)),
                 "2025Q1": (dt.date(2025, 1, 1), dt.date(2025, 3, 31))}


def _date(text: str) -> dt.date | None:
    return dt.datetime.strptime(text, "%Y%m%d").date() if text.strip() else None


@cache
def hcpcs_records(label: str) -> dict[tuple[str, str], tuple[dt.date | None, dt.date | None]]:
    """(kind, code) -> (added, terminated) from a release's first record lines (RIC 3: procedure, 7: modifier)."""
    archive, member = HCPCS_FILES[label]
    with zipfile.ZipFile(CMS / archive) as bundle:
        lines = bundle.read(member).decode("latin-1").splitlines()
    kinds = {"3": "procedure", "7": "modifier"}
    return {(kinds[line[10]], line[:5].strip()): (_date(line[268:276]), _date(line[284:292]))
            for line in lines if len(line) > 292 and line[10] in kinds}


@cache
def order_file(label: str) -> dict[str, bool]:
    """Undotted code -> billable, from an ICD-10-CM order file."""
    if label == "FY2021":
        text = (CMS / "icd10cm" / "icd10cm-order-Jan-2021.txt").read_text(encoding="latin-1")
    else:
        with zipfile.ZipFile(CMS / "icd10cm" / "fy2025" / "icd10cm-codes-2025.zip") as bundle:
            text = bundle.read("icd10cm_order_2025.txt").decode("latin-1")
    return {line[6:13].strip(): line[14] == "1" for line in text.splitlines() if len(line) > 14}


@cache
def tabular_2026() -> dict[str, bool]:
    """Undotted code -> billable, from the FY2026 (April 1, 2026) tabular XML, 7th characters applied."""
    root = ElementTree.parse(CMS / "icd10cm" / "icd10c-tabular-April-1-2026.xml").getroot()
    codes: dict[str, bool] = {}

    def walk(diag, sevenths: list[str]) -> None:
        name = diag.findtext("name").replace(".", "")
        own = [extension.get("char") for extension in diag.findall("sevenChrDef/extension")]
        sevenths = own or sevenths
        children = diag.findall("diag")
        codes[name] = not children and not sevenths
        if not children and sevenths:
            for char in sevenths:
                codes[name.ljust(6, "X") + char] = True
        for child in children:
            walk(child, sevenths)

    for section in root.iter("section"):
        for diag in section.findall("diag"):
            walk(diag, [])
    return codes


def icd10cm_release(label: str) -> dict[str, bool] | None:
    """The codes of a fiscal year's release, or None when the set has no file for that year."""
    if label in ("FY2021", "FY2025"):
        return order_file(label)
    return tabular_2026() if label == "FY2026" else None


def fiscal_year(day: dt.date) -> str:
    """October 1 starts the next fiscal year."""
    return f"FY{day.year + 1 if day.month >= 10 else day.year}"


def parse_day(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        return None


def hcpcs_verdict(code: str, kind: str, day: dt.date | None) -> str:
    """What the files say of a HCPCS code or modifier on a date."""
    if re.fullmatch(r"[0-9]{4}[0-9A-Z]|[0-9]{2}", code):  # CPT codes and modifiers are not in the release
        return "not checked"
    shape = r"[A-V][0-9]{4}" if kind == "procedure" else r"[A-Z0-9]{2}"
    if not re.fullmatch(shape, code):
        return "error"
    label = next((label for label, (first, last) in HCPCS_PERIODS.items() if day and first <= day <= last), None)
    if day is None or label is None:
        return "not checked"
    record = hcpcs_records(label).get((kind, code))
    if record is None:
        return "error"
    added, terminated = record
    return "error" if (added and added > day) or (terminated and terminated < day) else "ok"


def icd10cm_verdict(codes: list[str], day: dt.date | None) -> str:
    """Error when any code is not billable in the fiscal year's release."""
    if any(not re.fullmatch(r"[A-Z][0-9][0-9A-Z](\.?[0-9A-Z]{1,4})?", code) for code in codes):
        return "error"
    release = icd10cm_release(fiscal_year(day)) if day else None
    if release is None:
        return "not checked"
    return "ok" if all(release.get(code.replace(".", "")) for code in codes) else "error"


@cache
def lcd_codes() -> set[str]:
    """The HCPCS codes the current LCD export lists."""
    path = CMS / "mcd" / "current_lcd" / "current_lcd_csv" / "lcd_x_hcpc_code.csv"
    with path.open(encoding="cp1252", newline="") as handle:
        return {row["hcpc_code_id"].strip() for row in csv.DictReader(handle)}


@cache
def ncd_text() -> str:
    """Every narrative of the NCD export, one text."""
    path = next((CMS / "mcd" / "ncd").rglob("ncd_trkg.csv"))
    return path.read_text(encoding="cp1252")


def expected_from_files(line: dict) -> dict[str, str]:
    """Every rule's verdict for a line as the raw files give it."""
    day = parse_day(line.get("dos", ""))
    hcpcs = line.get("hcpcs")
    modifiers = [m for m in (line.get("modifiers") or "").split(";") if m]
    dx = [d for d in (line.get("dx") or "").split(";") if d]
    verdicts = {"date_of_service": "ok" if day else "error"}
    if hcpcs:
        verdicts["hcpcs_valid"] = hcpcs_verdict(hcpcs, "procedure", day)
        state = line.get("state")
        verdicts["lcd_coverage"] = ("not checked" if not state else "error" if state == "XX"
                                    else "warning" if hcpcs in lcd_codes() else "ok")
        verdicts["ncd_coverage"] = "warning" if re.search(rf"(?<![A-Za-z0-9]){hcpcs}(?![A-Za-z0-9])",
                                                          ncd_text()) else "ok"
        verdicts["article_dx_support"] = "not checked"  # no Article export here
    if modifiers:
        found = [hcpcs_verdict(modifier, "modifier", day) for modifier in modifiers]
        verdicts["modifier_valid"] = next(v for v in ("error", "ok", "not checked") if v in found)
    if dx:
        verdicts["icd10cm_valid"] = icd10cm_verdict(dx, day)
    return verdicts


@pytest.mark.parametrize("path", SETS, ids=lambda path: path.stem)
def test_every_expected_verdict_is_what_the_release_files_say(path: Path) -> None:
    if not (CMS / "README.md").exists():
        pytest.fail(f"real CMS corpus not found at {CMS}; set MEDRAG_CMS_DIR")
    cases = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
    assert len(cases) >= (40 if "dev" in path.stem else 25)
    disagreements = []
    for case in cases:
        from_files = expected_from_files(case["line"])
        for rule, verdict in case["expected"].items():
            if from_files.get(rule) != verdict:
                disagreements.append(f"{case['line']['line_id']} {rule}: set {verdict}, "
                                     f"files {from_files.get(rule)}")
    assert disagreements == []
