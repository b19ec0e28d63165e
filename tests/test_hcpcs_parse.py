"""HCPCS Level II: parsing the real 2019 fixed-width release, and finding release zips on a CMS page."""

from __future__ import annotations

import datetime as dt
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from medrag.core.errors import MedragError
from medrag.sources.hcpcs.release import (
    HCPCS_COLUMNS,
    HcpcsFormatError,
    HcpcsReleaseError,
    discover_hcpcs_zip_links,
    find_hcpcs_member,
    parse_hcpcs_file,
    parse_hcpcs_records,
    parse_hcpcs_zip,
    release_label_from_text,
)

POSTGRES_TYPES = {"text", "integer", "numeric", "boolean", "date", "timestamp", "text[]", "jsonb"}


@pytest.fixture(scope="module")
def record_file(cms_dir: Path) -> Path:
    """The extracted 2019 fixed-width record file."""
    return cms_dir / "hcpcs" / "HCPC2019_CONTR_ANWEB.txt"


@pytest.fixture(scope="module")
def release_zip(cms_dir: Path) -> Path:
    """The 2019 Alpha-Numeric HCPCS release zip, as CMS publishes it."""
    return cms_dir / "hcpcs" / "2019-Alpha-Numeric-HCPCS-File.zip"


@pytest.fixture(scope="module")
def records(record_file: Path) -> dict[str, dict]:
    """Parsed 2019 records keyed by code (procedure and modifier codes never collide: 5 vs 2 characters)."""
    return {record["code"]: record for record in parse_hcpcs_file(record_file)}


@pytest.fixture(scope="module")
def raw_lines(record_file: Path) -> list[str]:
    """The file's physical lines, decoded independently of the parser."""
    return record_file.read_bytes().decode("latin-1").split("\r\n")


def layout_field(line: str, begin: int, end: int) -> str:
    """Columns BEG..END (1-based, inclusive) as the official record layout numbers them."""
    return line[begin - 1 : end]


def lines_of(raw_lines: list[str], code_field: str) -> list[str]:
    """All physical lines (first + continuation) whose 5-character code field is code_field."""
    return [line for line in raw_lines if line[:5] == code_field]


# --- column list ---------------------------------------------------------------------------------------


def test_columns_are_unique_with_known_postgres_types() -> None:
    names = [name for name, _ in HCPCS_COLUMNS]
    assert len(names) == len(set(names))
    assert {pg_type for _, pg_type in HCPCS_COLUMNS} <= POSTGRES_TYPES
    # every field of the record layout, fillers aside, plus the derived kind
    assert len(HCPCS_COLUMNS) == 27


def test_every_record_has_exactly_the_columns_in_order(records: dict[str, dict]) -> None:
    names = [name for name, _ in HCPCS_COLUMNS]
    assert all(list(record) == names for record in records.values())


# --- counts on the real file ---------------------------------------------------------------------------


def test_2019_file_has_6440_procedures_and_360_modifiers(record_file: Path) -> None:
    parsed = parse_hcpcs_file(record_file)
    kinds = [record["kind"] for record in parsed]
    assert kinds.count("procedure") == 6440
    assert kinds.count("modifier") == 360
    assert len(parsed) == 6800
    assert {record["record_id_code"] for record in parsed if record["kind"] == "modifier"} == {"7"}
    assert {record["record_id_code"] for record in parsed if record["kind"] == "procedure"} == {"3"}


def test_first_lines_in_file_match_parsed_codes(raw_lines: list[str], records: dict[str, dict]) -> None:
    first_line_codes = {line[:5].strip() for line in raw_lines if len(line) > 10 and line[10] in "37"}
    assert first_line_codes == set(records)


def test_zip_gives_the_same_records_as_the_extracted_file(release_zip: Path, record_file: Path) -> None:
    assert parse_hcpcs_zip(release_zip) == parse_hcpcs_file(record_file)


# --- specific records checked against the source bytes -------------------------------------------------


def test_e0601_cpap_matches_its_source_line(raw_lines: list[str], records: dict[str, dict]) -> None:
    (source_line,) = lines_of(raw_lines, "E0601")
    cpap = records["E0601"]
    assert cpap["long_description"] == layout_field(source_line, 12, 91).rstrip()
    assert cpap["long_description"] == "Continuous positive airway pressure (cpap) device"
    assert "CONTINUOUS POSITIVE AIRWAY PRESSURE" in cpap["long_description"].upper()
    assert cpap["short_description"] == layout_field(source_line, 92, 119).rstrip()
    assert cpap["short_description"] == "Cont airway pressure device"
    assert cpap["kind"] == "procedure"
    assert cpap["sequence_number"] == 100
    assert cpap["pricing_indicator_codes"] == ["36"]
    assert cpap["multiple_pricing_indicator"] == "A"
    assert cpap["cim_references"] == ["60-17"]
    assert cpap["coverage_code"] == "D"
    assert cpap["betos_code"] == "D1E"
    assert cpap["type_of_service_codes"] == ["R"]
    assert cpap["anesthesia_base_units"] == 0
    assert cpap["code_added_date"] == dt.date(1988, 1, 1)
    assert cpap["action_effective_date"] == dt.date(2014, 1, 1)
    assert cpap["termination_date"] is None
    assert cpap["action_code"] == "N"
    assert cpap["statute_number"] is None and cpap["asc_payment_group"] is None


def test_ga_modifier_code_is_unpadded_and_description_merged(
    raw_lines: list[str], records: dict[str, dict]
) -> None:
    source_lines = lines_of(raw_lines, "   GA")
    assert [line[10] for line in source_lines] == ["7", "8"]
    waiver = records["GA"]
    assert waiver["kind"] == "modifier"
    assert waiver["long_description"] == (
        "Waiver of liability statement issued as required by payer policy, individual case"
    )
    assert waiver["short_description"] == "Liability waiver ind case"
    assert waiver["coverage_code"] == "C"
    assert waiver["code_added_date"] == dt.date(1995, 1, 1)
    assert waiver["action_effective_date"] == dt.date(2011, 1, 1)
    # modifiers carry no pricing or anesthesia data
    assert waiver["pricing_indicator_codes"] == [] and waiver["anesthesia_base_units"] is None


def test_five_line_description_is_merged_in_order(raw_lines: list[str], records: dict[str, dict]) -> None:
    source_lines = lines_of(raw_lines, "G0501")
    assert [line[10] for line in source_lines] == ["3", "4", "4", "4", "4"]
    expected = " ".join(layout_field(line, 12, 91).rstrip() for line in source_lines)
    description = records["G0501"]["long_description"]
    assert description == expected
    assert description.startswith("Resource-intensive services for patients for whom the use of specialized ")
    assert "adjustable padded leg supports) is medically necessary" in description
    assert description.endswith("(list separately in addition to primary service)")


def test_record_with_trimmed_trailing_blanks_keeps_its_continuation(
    raw_lines: list[str], records: dict[str, dict]
) -> None:
    short_lines = [line for line in lines_of(raw_lines, "G8891") if len(line) < 320]
    assert len(short_lines) == 1  # the real file has one 316-character record
    assert records["G8891"]["long_description"] == (
        "Documentation of medical reason(s) for most recent ldl-c not under control "
        "(e.g., patients with palliative goals for whom treatment of hypertension "
        "with standard treatment goals is not clinically appropriate)"
    )


def test_repeated_fields_and_dates(raw_lines: list[str], records: dict[str, dict]) -> None:
    (deleted_line,) = lines_of(raw_lines, "C8904")
    deleted = records["C8904"]
    assert layout_field(deleted_line, 285, 292) == "20181231"
    assert deleted["termination_date"] == dt.date(2018, 12, 31)
    assert deleted["action_code"] == "D"
    assert deleted["cross_reference_codes"] == ["77046"]
    assert deleted["statute_number"] == "1833(t)(2)"

    assert records["G0124"]["pricing_indicator_codes"] == ["11", "21"]
    assert records["G0124"]["multiple_pricing_indicator"] == "C"
    assert records["G0328"]["lab_certification_codes"] == ["310", "400"]
    assert records["AH"]["mcm_references"] == ["2150", "5112"]
    assert records["A4216"]["type_of_service_codes"] == ["1", "L", "P"]

    lutetium = records["A9513"]
    assert lutetium["asc_payment_group"] == "YY"
    assert lutetium["asc_payment_group_effective_date"] == dt.date(2019, 1, 1)
    assert lutetium["cim_references"] == ["153.60"]


def test_terminated_codes_match_termination_columns(raw_lines: list[str], records: dict[str, dict]) -> None:
    first_lines = [line for line in raw_lines if len(line) > 10 and line[10] in "37"]
    terminated_in_file = {line[:5].strip() for line in first_lines if layout_field(line, 285, 292).strip()}
    assert terminated_in_file == {code for code, record in records.items() if record["termination_date"]}
    assert len(terminated_in_file) == 515


# --- malformed input -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_lines(raw_lines: list[str]) -> list[str]:
    """The disclaimer lines and the first records of the real file (lines 1-20)."""
    return raw_lines[:20]


def replaced(lines: list[str], line_number: int, new_line: str) -> list[str]:
    """A copy of lines with the 1-based line_number replaced."""
    changed = list(lines)
    changed[line_number - 1] = new_line
    return changed


def test_sample_lines_parse_cleanly(sample_lines: list[str]) -> None:
    parsed = list(parse_hcpcs_records(sample_lines))
    assert parsed[0]["code"] == "A1"
    assert parsed[0]["long_description"] == "Dressing for one wound"


@pytest.mark.parametrize(
    ("line_number", "corrupt", "problem"),
    [
        (12, lambda line: line[:10] + "5" + line[11:], "record identification code '5'"),
        (13, lambda line: line[:276] + "2019AB01" + line[284:], "action_effective_date '2019AB01'"),
        (14, lambda line: line[:268] + "20191301" + line[276:], "code_added_date '20191301'"),
        (15, lambda line: line + "X", "longer than 320"),
        (16, lambda line: line[:5] + "0A100" + line[10:], "sequence number '0A100'"),
        (17, lambda line: "  A" + line[3:], "modifier code field '  AA9'"),
        (18, lambda line: line[:10] + "4" + line[11:], "does not follow that code's first line"),
    ],
)
def test_malformed_line_names_file_and_line(
    sample_lines: list[str], line_number: int, corrupt: Callable[[str], str], problem: str
) -> None:
    bad_lines = replaced(sample_lines, line_number, corrupt(sample_lines[line_number - 1]))
    with pytest.raises(HcpcsFormatError) as caught:
        list(parse_hcpcs_records(bad_lines, source="HCPC_TEST.txt"))
    message = str(caught.value)
    assert f"HCPC_TEST.txt line {line_number}:" in message
    assert problem in message


def test_continuation_with_detail_data_is_rejected(raw_lines: list[str]) -> None:
    first, continuation = lines_of(raw_lines, "   GA")
    bad_continuation = continuation[:91] + "Liability" + continuation[100:]
    with pytest.raises(HcpcsFormatError, match=r"line 2: continuation line has data in the detail columns"):
        list(parse_hcpcs_records([first, bad_continuation]))


def test_duplicate_code_is_rejected(raw_lines: list[str]) -> None:
    (cpap,) = lines_of(raw_lines, "E0601")
    with pytest.raises(HcpcsFormatError, match=r"line 2: procedure code 'E0601' appears a second time"):
        list(parse_hcpcs_records([cpap, cpap]))


def test_file_without_records_is_rejected(tmp_path: Path) -> None:
    empty = tmp_path / "HCPC_EMPTY.txt"
    empty.write_bytes(b"***Disclaimers\r\nnothing else\r\n")
    with pytest.raises(HcpcsFormatError, match=r"HCPC_EMPTY.txt: no HCPCS records found"):
        parse_hcpcs_file(empty)
    assert issubclass(HcpcsFormatError, MedragError)


def test_lines_from_a_file_object_keep_working(record_file: Path) -> None:
    with record_file.open(encoding="iso-8859-1", newline="") as handle:
        head = [next(handle) for _ in range(40)]
    assert all(line.endswith("\r\n") for line in head)
    assert [record["code"] for record in parse_hcpcs_records(head)][:3] == ["A1", "A2", "A3"]


# --- release zip member --------------------------------------------------------------------------------


def test_member_finder_picks_the_fixed_width_file_from_the_real_zip(release_zip: Path) -> None:
    with zipfile.ZipFile(release_zip) as archive:
        names = archive.namelist()
    assert "HCPC2019_CONTR_ANWEB.xlsx" in names
    assert find_hcpcs_member(names) == "HCPC2019_CONTR_ANWEB.txt"


def test_member_finder_ignores_case_and_folders() -> None:
    names = ["hcpcs/readme.txt", "hcpcs/hcpc2026_jan_contr_anweb.TXT", "hcpcs/hcpc2026_jan_contr_anweb.xlsx"]
    assert find_hcpcs_member(names) == "hcpcs/hcpc2026_jan_contr_anweb.TXT"


def test_member_finder_names_the_archive_when_absent() -> None:
    names = ["HCPC2019_README.txt", "HCPC2019_CONTR_ANWEB.xlsx", "proc_notes_2019.txt"]
    with pytest.raises(HcpcsReleaseError, match=r"january\.zip: no fixed-width HCPCS record file"):
        find_hcpcs_member(names, archive="january.zip")


def test_member_finder_refuses_to_guess_between_two_files() -> None:
    with pytest.raises(HcpcsReleaseError, match="several candidate"):
        find_hcpcs_member(["a/HCPC2026_CONTR_ANWEB.txt", "b/HCPC2026_CONTR_ANWEB.txt"])


# --- discovery on a page shaped like the CMS quarterly update page -------------------------------------

QUARTERLY_PAGE = """<!DOCTYPE html>
<html lang="en"><head><title>Quarterly Update | CMS</title></head>
<body>
<nav><a href="/medicare">Medicare</a> <a href="/medicare/coding-billing">Coding &amp; Billing</a></nav>
<main>
  <h1>Quarterly Update</h1>
  <p>HCPCS quarterly update files. See also the <a href="../annual-update">annual update</a>.</p>
  <h2>Related Links</h2>
  <ul class="field--name-field-related-links">
    <li><a href="/files/zip/october-2025-alpha-numeric-hcpcs-file.zip">October 2025
        Alpha-Numeric HCPCS File (ZIP)</a></li>
    <li><a href="/files/zip/january-2026-alpha-numeric-hcpcs-file.zip"><span
        class="link-text">January&nbsp;2026 Alpha-Numeric HCPCS File</span> (ZIP)</a></li>
    <li><a href="/files/zip/2026-hcpcs-record-layout.zip">2026 HCPCS Record Layout (ZIP)</a></li>
    <li><a href="/files/zip/july-2025-alpha-numeric-hcpcs-file.zip">
        July 2025 alpha-numeric HCPCS file (ZIP)</a></li>
    <li><a href="files/2025-alpha-numeric-hcpcs-index.pdf">2025 Alpha-Numeric HCPCS Index (PDF)</a></li>
    <li><a href="/files/zip/april-2025-alpha-numeric-hcpcs-file.zip">
        April 2025 AlphaNumeric HCPCS File (ZIP)</a></li>
    <li><a href="archive/2019-alpha-numeric-hcpcs-file.zip">2019 Alpha-Numeric HCPCS File (ZIP)</a></li>
    <li><a href="/files/zip/january-2026-alpha-numeric-hcpcs-file.zip">
        January 2026 Alpha-Numeric HCPCS File (ZIP)</a></li>
    <li><a href="/files/zip/hcpcs-corrections.zip">Corrections to the Alpha-Numeric HCPCS File (ZIP)</a></li>
    <li><a>Alpha-Numeric HCPCS File without a link</a></li>
  </ul>
</main>
</body></html>
"""
PAGE_URL = "https://www.cms.gov/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update"


def test_discovery_finds_release_zips_newest_first_with_absolute_urls() -> None:
    links = discover_hcpcs_zip_links(QUARTERLY_PAGE, PAGE_URL)
    assert links == [
        (
            "https://www.cms.gov/files/zip/january-2026-alpha-numeric-hcpcs-file.zip",
            "January 2026 Alpha-Numeric HCPCS File (ZIP)",
        ),
        (
            "https://www.cms.gov/files/zip/october-2025-alpha-numeric-hcpcs-file.zip",
            "October 2025 Alpha-Numeric HCPCS File (ZIP)",
        ),
        (
            "https://www.cms.gov/files/zip/july-2025-alpha-numeric-hcpcs-file.zip",
            "July 2025 alpha-numeric HCPCS file (ZIP)",
        ),
        (
            "https://www.cms.gov/files/zip/april-2025-alpha-numeric-hcpcs-file.zip",
            "April 2025 AlphaNumeric HCPCS File (ZIP)",
        ),
        (
            "https://www.cms.gov/medicare/coding-billing/healthcare-common-procedure-system/"
            "archive/2019-alpha-numeric-hcpcs-file.zip",
            "2019 Alpha-Numeric HCPCS File (ZIP)",
        ),
        (
            "https://www.cms.gov/files/zip/hcpcs-corrections.zip",
            "Corrections to the Alpha-Numeric HCPCS File (ZIP)",
        ),
    ]


def test_discovery_on_a_page_without_release_links_is_empty() -> None:
    page = '<p><a href="/files/zip/2026-hcpcs-record-layout.zip">2026 HCPCS Record Layout (ZIP)</a></p>'
    assert discover_hcpcs_zip_links(page, PAGE_URL) == []


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("January 2026 Alpha-Numeric HCPCS File (ZIP)", "2026Q1"),
        ("april 2025 Alpha-Numeric HCPCS File", "2025Q2"),
        ("July  2024\u00a0Alpha-Numeric HCPCS File (ZIP)", "2024Q3"),
        ("OCTOBER 2023 Alpha-Numeric HCPCS File", "2023Q4"),
        ("2019 Alpha-Numeric HCPCS File (ZIP)", "2019"),
        ("March 2026 Alpha-Numeric HCPCS File", None),
        ("Corrections to the Alpha-Numeric HCPCS File (ZIP)", None),
    ],
)
def test_release_label_from_link_text(text: str, label: str | None) -> None:
    assert release_label_from_text(text) == label
