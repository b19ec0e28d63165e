"""MCD export parsing on the real NCD and current-LCD CSV files (and small hand-made broken files)."""

from __future__ import annotations

import collections
from datetime import date, datetime
from pathlib import Path

import pytest

from medrag.sources.mcd.release import (
    MCD_TABLES,
    NCD_COLUMNS,
    PARTS,
    McdFormatError,
    convert_row,
    expected_members,
    find_missing_members,
    find_unknown_members,
    ncd_documents,
    read_mcd_csv,
    read_table,
    spec_for_member,
)

NCD_DIR = Path("mcd/ncd/ncd_csv")
LCD_DIR = Path("mcd/current_lcd/current_lcd_csv")

# Records per member, counted on the real files with the stdlib csv module (header excluded).
PRESENT_MEMBER_ROWS: dict[str, tuple[Path, int]] = {
    "ncd_bnft_ctgry_ref.csv": (NCD_DIR, 78),
    "ncd_pblctn_ref.csv": (NCD_DIR, 42),
    "ncd_trkg.csv": (NCD_DIR, 352),
    "ncd_trkg_bnft_xref.csv": (NCD_DIR, 588),
    "contractor.csv": (LCD_DIR, 120),
    "contractor_jurisdiction.csv": (LCD_DIR, 291),
    "contractor_oversight.csv": (LCD_DIR, 120),
    "contractor_subtype_lookup.csv": (LCD_DIR, 4),
    "contractor_type_lookup.csv": (LCD_DIR, 13),
    "dmerc_region_lookup.csv": (LCD_DIR, 14),
    "draft_contact_lookup.csv": (LCD_DIR, 162),
    "lcd_future_retire.csv": (LCD_DIR, 85),
    "lcd_related_documents.csv": (LCD_DIR, 4610),
    "lcd_related_ncd_documents.csv": (LCD_DIR, 1902),
    "lcd_related_source_icd9.csv": (LCD_DIR, 48),
    "lcd_url_type_lookup.csv": (LCD_DIR, 1),
    "lcd_x_advisory_committee.csv": (LCD_DIR, 149),
    "lcd_x_contractor.csv": (LCD_DIR, 12758),
    "lcd_x_hcpc_code.csv": (LCD_DIR, 2102),
    "lcd_x_hcpc_code_group.csv": (LCD_DIR, 96),
    "lcd_x_primary_jurisdiction.csv": (LCD_DIR, 241),
    "lcd_x_reason_change.csv": (LCD_DIR, 1055),
    "lcd_x_requestor_letters.csv": (LCD_DIR, 41),
    "lcd_x_sticky_note.csv": (LCD_DIR, 23),
    "lcd_x_synopsis_changes_fields.csv": (LCD_DIR, 32),
    "lcd_x_urls.csv": (LCD_DIR, 134),
    "reason_change_lookup.csv": (LCD_DIR, 108),
    "region_lookup.csv": (LCD_DIR, 11),
    "state_lookup.csv": (LCD_DIR, 63),
    "state_x_region.csv": (LCD_DIR, 63),
    "synopsis_changes_fields_lookup.csv": (LCD_DIR, 9),
    "update_period.csv": (LCD_DIR, 1152),
}

OXYGEN_SENTENCE = (
    "The time of need is defined as during the patient’s illness when the presumption is that the provision "
    "of oxygen in the home setting will improve the patient’s condition."
)


@pytest.fixture(scope="module")
def ncd_trkg_rows(cms_dir: Path) -> list[dict]:
    """Raw rows of the real ncd_trkg.csv."""
    return read_mcd_csv(cms_dir / NCD_DIR / "ncd_trkg.csv")


@pytest.fixture(scope="module")
def ncd_docs(ncd_trkg_rows: list[dict]) -> list[dict]:
    """NCD documents built from the real ncd_trkg.csv."""
    return ncd_documents(ncd_trkg_rows)


def _source_text(value: object) -> str:
    """How the export writes a typed value, to compare a converted row with the raw one."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


# --- the spec catalogue ---------------------------------------------------------------------------------------


def test_spec_catalogue_covers_every_documented_table() -> None:
    assert {part: len(expected_members(part)) for part in PARTS} == {"ncd": 4, "lcd": 30, "article": 37}
    for table, spec in MCD_TABLES.items():
        assert table == spec.table == "mcd_" + spec.member.removesuffix(".csv")
        assert spec.part in PARTS and set(spec.key) <= set(spec.column_names)
        assert all(column_type in {"text", "integer", "timestamp", "boolean"} for _, column_type in spec.columns)
    headerless = [spec.member for spec in MCD_TABLES.values() if not spec.has_header]
    assert headerless == ["lcd_x_requestor_letters.csv"]
    assert spec_for_member("current_lcd_csv/LCD_X_HCPC_CODE.csv").table == "mcd_lcd_x_hcpc_code"
    with pytest.raises(McdFormatError, match="not a known MCD export table"):
        spec_for_member("lcd_x_something_new.csv")


def test_every_present_csv_is_a_known_member(cms_dir: Path) -> None:
    on_disk = {path.name for folder in (NCD_DIR, LCD_DIR) for path in (cms_dir / folder).glob("*.csv")}
    assert on_disk == set(PRESENT_MEMBER_ROWS)
    documented = set(expected_members("ncd")) | set(expected_members("lcd"))
    assert on_disk <= documented
    assert documented - on_disk == {"lcd.csv", "lcd_x_revision_history.csv"}


@pytest.mark.parametrize("member", sorted(PRESENT_MEMBER_ROWS))
def test_present_member_parses_and_converts_with_its_spec(cms_dir: Path, member: str) -> None:
    folder, expected_rows = PRESENT_MEMBER_ROWS[member]
    path = cms_dir / folder / member
    spec = spec_for_member(member)
    typed = read_table(path, spec)
    raw = read_mcd_csv(path, header=None if spec.has_header else spec.column_names)
    assert len(typed) == len(raw) == expected_rows
    for typed_row, raw_row in zip(typed, raw, strict=True):
        assert list(typed_row) == spec.column_names
        for name, column_type in spec.columns:
            value, source = typed_row[name], raw_row[name]
            if source is None:
                assert value is None
            elif column_type == "text":
                assert value == source
            elif column_type == "timestamp":
                assert _source_text(value) == source[:19]
                assert value.microsecond == int(source[20:26].ljust(6, "0") or 0)
            elif column_type == "boolean":
                assert str(value) == source
            else:
                assert str(value) == source.strip()


def test_missing_members_of_each_part(cms_dir: Path) -> None:
    lcd_names = [path.name for path in (cms_dir / LCD_DIR).glob("*.csv")]
    ncd_names = [path.name for path in (cms_dir / NCD_DIR).glob("*.csv")]
    assert find_missing_members("lcd", lcd_names) == ["lcd.csv", "lcd_x_revision_history.csv"]
    assert find_missing_members("ncd", ncd_names) == []
    # Zip paths work too; the Article export shares the ten contractor/state/region/period lookups.
    article_missing = find_missing_members("article", [f"current_lcd_csv/{name}" for name in lcd_names])
    assert len(article_missing) == 27 and all(name.startswith("article") for name in article_missing)
    assert find_unknown_members("ncd", [*ncd_names, "readme_first.txt", "ncd_new_table.csv"]) == [
        "ncd_new_table.csv"
    ]
    with pytest.raises(ValueError, match="unknown MCD part"):
        find_missing_members("current_lcd", lcd_names)


# --- reading --------------------------------------------------------------------------------------------------


def test_lcd_x_hcpc_code_rows_match_the_source_bytes(cms_dir: Path) -> None:
    path = cms_dir / LCD_DIR / "lcd_x_hcpc_code.csv"
    raw = read_mcd_csv(path)
    assert len(raw) == 2102
    # First record in the file:
    # "33312","37","A9900","97","4","N","2025-03-25 18:07:03","MISCELLANEOUS DME SUPPLY, ...","Supply/..."
    assert raw[0] == {
        "lcd_id": "33312",
        "lcd_version": "37",
        "hcpc_code_id": "A9900",
        "hcpc_code_version": "97",
        "hcpc_code_group": "4",
        "range": "N",
        "last_updated": "2025-03-25 18:07:03",
        "long_description": "MISCELLANEOUS DME SUPPLY, ACCESSORY, AND/OR SERVICE COMPONENT OF ANOTHER HCPCS CODE",
        "short_description": "Supply/accessory/service",
    }
    typed = read_table(path, MCD_TABLES["mcd_lcd_x_hcpc_code"])
    assert typed[0]["lcd_id"] == 33312 and typed[0]["hcpc_code_group"] == 4
    assert typed[0]["last_updated"] == datetime(2025, 3, 25, 18, 7, 3)
    assert len({(row["lcd_id"], row["lcd_version"]) for row in typed}) == len(
        {(row["lcd_id"], row["lcd_version"]) for row in raw}
    )


def test_headerless_requestor_letters_read_with_the_spec_header(cms_dir: Path, tmp_path: Path) -> None:
    path = cms_dir / LCD_DIR / "lcd_x_requestor_letters.csv"
    spec = MCD_TABLES["mcd_lcd_x_requestor_letters"]
    rows = read_table(path, spec)
    assert len(rows) == 41
    # First line: "39647","3","1","Elai Davicioni-Veracyte","/attachments/lcd/39647_2/DavicioniLetter.pdf",
    #             "207778","1","2023-10-02 13:11:47.500000000"
    assert rows[0] == {
        "lcd_id": 39647,
        "lcd_version": 3,
        "letter_id": 1,
        "requestor_name": "Elai Davicioni-Veracyte",
        "letter_path": "/attachments/lcd/39647_2/DavicioniLetter.pdf",
        "size": 207778,
        "sort_order": 1,
        "last_updated": datetime(2023, 10, 2, 13, 11, 47, 500000),
    }
    # Without the spec header the first letter would be taken for column names ("1" twice).
    with pytest.raises(McdFormatError, match="line 1: header has empty or repeated column names"):
        read_mcd_csv(path)
    # Should a later export add the header row, the same rows come back.
    with_header = tmp_path / "lcd_x_requestor_letters.csv"
    with_header.write_bytes(b",".join(name.upper().encode() for name in spec.column_names) + b"\r\n"
                            + path.read_bytes())
    assert read_table(with_header, spec) == rows


def test_cp1252_punctuation_is_decoded(cms_dir: Path) -> None:
    notes = read_mcd_csv(cms_dir / LCD_DIR / "lcd_x_sticky_note.csv")
    # Bytes 0x93/0x94 around "Explanation of Revision:" in the LCD 33977 sticky note.
    note = next(row["sticky_note"] for row in notes if row["lcd_id"] == "33977")
    assert note.startswith("Note: In the “Explanation of Revision:” in Revision History Number R4")


def test_invalid_cp1252_byte_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "state_lookup.csv"
    path.write_bytes(b'state_id,"state_abbrev","description"\r\n1,"AK","Alaska"\r\n2,"AL","Ala\x81bama"\r\n')
    with pytest.raises(McdFormatError) as caught:
        read_mcd_csv(path)
    message = str(caught.value)
    assert str(path) in message and "line 3" in message and "0x81" in message


def test_quoted_multiline_fields_and_crlf_records(tmp_path: Path) -> None:
    path = tmp_path / "lcd_x_hcpc_code_group.csv"
    path.write_bytes(
        b'lcd_id,lcd_version,hcpc_code_group,"paragraph",last_updated\r\n'
        b'1,2,3,"<p>line one</p>\n<p>say ""hi""</p>",2025-03-25 18:07:02.777000000\r\n'
        b'1,2,4,"",2025-03-25 18:07:02\r\n'
    )
    rows = read_table(path, MCD_TABLES["mcd_lcd_x_hcpc_code_group"])
    assert rows[0]["paragraph"] == '<p>line one</p>\n<p>say "hi"</p>'
    assert rows[0]["last_updated"] == datetime(2025, 3, 25, 18, 7, 2, 777000)
    assert rows[1]["paragraph"] is None


def test_bad_rows_raise_clear_errors(tmp_path: Path) -> None:
    spec = MCD_TABLES["mcd_lcd_future_retire"]
    short_row = tmp_path / "lcd_future_retire.csv"
    short_row.write_bytes(b"lcd_id,retire_dt\r\n34011,2025-06-26 00:00:00\r\n34012\r\n")
    with pytest.raises(McdFormatError, match=r"line 3: 1 fields where the header has 2"):
        read_mcd_csv(short_row)
    bad_value = tmp_path / "bad_value.csv"
    bad_value.write_bytes(b"lcd_id,retire_dt\r\n34011,2025-06-26 00:00:00\r\nL34012,2025-06-26\r\n")
    with pytest.raises(McdFormatError, match=r"line 3: mcd_lcd_future_retire\.lcd_id: cannot read 'L34012'"):
        read_table(bad_value, spec)
    repeated = tmp_path / "repeated.csv"
    repeated.write_bytes(b"lcd_id,retire_dt\r\n34011,2025-06-26\r\n34011,2025-07-01\r\n")
    with pytest.raises(McdFormatError, match=r"line 3: key \{'lcd_id': 34011\} repeats the row on line 2"):
        read_table(repeated, spec)


def test_convert_row_rejects_bad_values_and_columns(ncd_trkg_rows: list[dict]) -> None:
    spec = MCD_TABLES["mcd_ncd_trkg_bnft_xref"]
    good = {"ncd_id": "1", "ncd_vrsn_num": "3", "bnft_ctgry_cd": "2", "creatd_tmstmp": "2025-05-27 12:20:33",
            "last_updt_tmstmp": None}
    assert convert_row(spec, good) == {"ncd_id": 1, "ncd_vrsn_num": 3, "bnft_ctgry_cd": 2,
                                       "creatd_tmstmp": datetime(2025, 5, 27, 12, 20, 33),
                                       "last_updt_tmstmp": None}
    with pytest.raises(McdFormatError, match=r"mcd_ncd_trkg_bnft_xref\.creatd_tmstmp: cannot read '05/27/2025'"):
        convert_row(spec, {**good, "creatd_tmstmp": "05/27/2025"})
    with pytest.raises(McdFormatError, match=r"bnft_ctgry_cd: cannot read '99999999999' as integer"):
        convert_row(spec, {**good, "bnft_ctgry_cd": "99999999999"})
    with pytest.raises(McdFormatError, match=r"key column\(s\) ncd_id empty"):
        convert_row(spec, {**good, "ncd_id": None})
    with pytest.raises(McdFormatError, match=r"unexpected: \['extra'\]; missing: \['last_updt_tmstmp'\]"):
        convert_row(spec, {**{k: v for k, v in good.items() if k != "last_updt_tmstmp"}, "extra": "x"})
    with pytest.raises(McdFormatError, match=r"mcd_ncd_trkg\.under_rvw: cannot read 'Yes' as boolean"):
        convert_row(MCD_TABLES["mcd_ncd_trkg"], {**ncd_trkg_rows[0], "under_rvw": "Yes"})


# --- NCD documents --------------------------------------------------------------------------------------------


def test_ncd_trkg_holds_one_version_of_each_of_352_ncds(ncd_trkg_rows: list[dict], ncd_docs: list[dict]) -> None:
    assert len(ncd_trkg_rows) == 352
    assert len({row["ncd_id"] for row in ncd_trkg_rows}) == 352
    assert len({row["ncd_mnl_sect"] for row in ncd_trkg_rows}) == 352
    # Version numbers are not 1 everywhere: this export keeps only the latest version of each NCD.
    versions = collections.Counter(doc["version"] for doc in ncd_docs)
    assert versions[1] == 229 and max(versions) == 11
    assert all(doc["is_current"] for doc in ncd_docs)
    assert sum(doc["termination_date"] is not None for doc in ncd_docs) == 13
    assert collections.Counter(doc["coverage_level_code"] for doc in ncd_docs) == {2: 209, 1: 77, 3: 64, 4: 2}
    assert sum(doc["coverage_level"] is None for doc in ncd_docs) == 2
    assert all(set(doc) == {name for name, _ in NCD_COLUMNS} for doc in ncd_docs)


def test_home_oxygen_ncd_240_2(ncd_docs: list[dict]) -> None:
    oxygen = next(doc for doc in ncd_docs if doc["section"] == "240.2")
    assert oxygen["title"] == "Home Use of Oxygen"
    assert (oxygen["ncd_id"], oxygen["version"]) == (169, 2)
    assert oxygen["effective_date"] == date(2021, 9, 27)
    assert oxygen["implementation_date"] == date(2023, 1, 3)
    assert oxygen["termination_date"] is None
    assert (oxygen["transmittal_number"], oxygen["change_request_number"]) == (11263, 12607)
    assert oxygen["transmittal_url"] == "https://www.cms.gov/files/document/r11263ncd.pdf"
    assert oxygen["coverage_level"] == "restricted coverage" and oxygen["under_review"] is True
    assert oxygen["description"].startswith("A. General\n\nWhen used in the home, oxygen")
    assert OXYGEN_SENTENCE in oxygen["indications_limitations"]
    assert oxygen["cross_reference"] is None and oxygen["other"] is None
    # last_clrnc_tmstmp 2023-06-14 is older than last_updt_tmstmp 2024-12-02 18:14:53.
    assert oxygen["last_changed_at"] == datetime(2024, 12, 2, 18, 14, 53)
    for column in ("description", "indications_limitations", "revision_history"):
        assert "<" not in oxygen[column] and "&" not in oxygen[column].replace("Medicare & Medicaid", "")


def test_ncd_documents_accept_typed_rows_and_mark_the_latest_version(
    cms_dir: Path, ncd_trkg_rows: list[dict], ncd_docs: list[dict]
) -> None:
    typed = read_table(cms_dir / NCD_DIR / "ncd_trkg.csv", MCD_TABLES["mcd_ncd_trkg"])
    assert ncd_documents(typed) == ncd_docs
    # A full (historical) export repeats an NCD with several versions: only the highest is current.
    oxygen = next(row for row in typed if row["ncd_mnl_sect"] == "240.2")
    history = [{**oxygen, "ncd_vrsn_num": 1}, oxygen, {**oxygen, "ncd_vrsn_num": 3}]
    assert [(doc["version"], doc["is_current"]) for doc in ncd_documents(history)] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    with pytest.raises(McdFormatError, match="NCD 169 version 2 appears twice"):
        ncd_documents([oxygen, oxygen])
