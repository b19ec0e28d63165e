"""ICD-10-CM tabular XML and order-file parsers, checked against the real CDC release files."""

from __future__ import annotations

import re
import time
import unicodedata
from pathlib import Path
from xml.sax.saxutils import unescape

import pytest

from medrag.core.errors import MedragError
from medrag.core.identifiers import dotted_icd10cm
from medrag.sources.icd10cm.release import (
    ICD10CM_CHAPTER_COLUMNS,
    ICD10CM_CODE_COLUMNS,
    ICD10CM_ORDER_COLUMNS,
    ICD10CM_SECTION_COLUMNS,
    NOTE_COLUMNS,
    Icd10cmFormatError,
    TabularRelease,
    codes_from_order,
    find_order_member,
    find_tabular_member,
    fiscal_year_label,
    parse_order_file,
    parse_tabular,
    seventh_character_exceptions,
)

TABULAR_2026 = "icd10cm/icd10c-tabular-April-1-2026.xml"
TABULAR_2021 = "icd10cm/icd10cm_tabular_2021.xml"
ORDER_2021 = "icd10cm/icd10cm-order-Jan-2021.txt"


@pytest.fixture(scope="module")
def tabular_2026(cms_dir: Path) -> TabularRelease:
    """The FY2026 (April 1, 2026) tabular, parsed once for this module."""
    return parse_tabular(cms_dir / TABULAR_2026)


@pytest.fixture(scope="module")
def tabular_2021(cms_dir: Path) -> TabularRelease:
    """The FY2021 tabular, parsed once for this module."""
    return parse_tabular(cms_dir / TABULAR_2021)


@pytest.fixture(scope="module")
def order_2021(cms_dir: Path) -> list[dict]:
    """The FY2021 order file, parsed once for this module."""
    return parse_order_file(cms_dir / ORDER_2021)


def codes_by_name(release: TabularRelease) -> dict[str, dict]:
    """Index code rows by code."""
    return {row["code"]: row for row in release.codes}


def raw_own_notes(xml_text: str, code: str) -> dict[str, list[str]]:
    """Read a diag's own note blocks straight from the XML text, without an XML parser, as the oracle."""
    start = xml_text.index(f"<name>{code}</name>")
    # A diag's own notes come before its first child <diag> and before its closing tag.
    end = min(pos for pos in (xml_text.find("<diag", start), xml_text.find("</diag>", start)) if pos >= 0)
    block = xml_text[start:end]
    notes: dict[str, list[str]] = {}
    for tag, column in NOTE_COLUMNS.items():
        for container in re.findall(rf"<{tag}>(.*?)</{tag}>", block, flags=re.S):
            raw_notes = re.findall(r"<note>(.*?)</note>", container, flags=re.S)
            notes.setdefault(column, []).extend(" ".join(unescape(note).split()) for note in raw_notes)
    return notes


# ------------------------------------------------------------------------------------------- tabular: shape


@pytest.mark.parametrize(
    ("relative_path", "release_fixture"), [(TABULAR_2026, "tabular_2026"), (TABULAR_2021, "tabular_2021")]
)
def test_one_code_row_per_diag_element_in_the_source_bytes(
    cms_dir: Path, relative_path: str, release_fixture: str, request: pytest.FixtureRequest
) -> None:
    raw = (cms_dir / relative_path).read_text(encoding="utf-8")
    release: TabularRelease = request.getfixturevalue(release_fixture)
    diag_elements = raw.count("<diag>") + raw.count("<diag ")
    assert len([row for row in release.codes if row["seventh_character"] is None]) == diag_elements
    assert len(release.sections) == raw.count("<section id=")
    assert len({row["code"] for row in release.codes}) == len(release.codes)


def test_code_counts_match_the_published_figures(
    tabular_2026: TabularRelease, tabular_2021: TabularRelease
) -> None:
    listed = {"FY2026": 46_881, "FY2021": 45_017}  # <diag> codes; the rest are their 7th-character forms
    for release in (tabular_2026, tabular_2021):
        assert sum(1 for row in release.codes if row["seventh_character"] is None) == listed[release.fiscal_year]
    # CDC's FY2021 order file lists 72,621 billable codes (the test below checks them code by code).
    assert sum(1 for row in tabular_2021.codes if row["billable"]) == 72_621


def test_version_and_fiscal_year(tabular_2026: TabularRelease, tabular_2021: TabularRelease) -> None:
    assert (tabular_2026.version, tabular_2026.fiscal_year) == ("2026", "FY2026")
    assert (tabular_2021.version, tabular_2021.fiscal_year) == ("2021", "FY2021")
    assert tabular_2026.source_file == Path(TABULAR_2026).name


def test_rows_carry_exactly_the_declared_columns(
    tabular_2026: TabularRelease, order_2021: list[dict]
) -> None:
    expected = [
        (tabular_2026.chapters, ICD10CM_CHAPTER_COLUMNS),
        (tabular_2026.sections, ICD10CM_SECTION_COLUMNS),
        (tabular_2026.codes, ICD10CM_CODE_COLUMNS),
        (order_2021, ICD10CM_ORDER_COLUMNS),
    ]
    for rows, columns in expected:
        names = [name for name, _ in columns]
        assert all(list(row) == names for row in rows)


def test_parsing_the_2026_tabular_is_fast(cms_dir: Path) -> None:
    started = time.perf_counter()
    parse_tabular(cms_dir / TABULAR_2026)
    assert time.perf_counter() - started < 10


def test_only_the_visual_impairment_grid_is_left_out(tabular_2026: TabularRelease) -> None:
    assert tabular_2026.skipped_elements == {"visualImpairment": 1}


# ------------------------------------------------------------------------------------ chapters, sections


def test_twenty_two_chapters_with_ranges_from_their_sections(tabular_2026: TabularRelease) -> None:
    assert [row["chapter"] for row in tabular_2026.chapters] == list(range(1, 23))
    first = tabular_2026.chapters[0]
    assert first["description"] == "Certain infectious and parasitic diseases (A00-B99)"
    assert (first["first_code"], first["last_code"]) == ("A00", "B99")
    assert first["use_additional_code"] == ["code to identify resistance to antimicrobial drugs (Z16.-)"]
    assert first["excludes2"][0] == "carrier or suspected carrier of infectious disease (Z22.-)"
    assert len(first["excludes2"]) == 4
    # Chapters 1-21 state their range in the description and it agrees with the section index.
    for chapter in tabular_2026.chapters[:21]:
        assert chapter["description"].endswith(f"({chapter['first_code']}-{chapter['last_code']})")


def test_sections_link_to_chapters_and_grouping_sections_have_no_codes(tabular_2026: TabularRelease) -> None:
    sections = {row["section_id"]: row for row in tabular_2026.sections}
    diabetes = sections["E08-E13"]
    assert diabetes["description"] == "Diabetes mellitus (E08-E13)"
    assert (diabetes["chapter"], diabetes["first_code"], diabetes["last_code"], diabetes["has_codes"]) == (
        4, "E08", "E13", True,
    )
    # "C00-C96" is a heading with no sectionRef and no diags; its bounds come from its id.
    grouping = sections["C00-C96"]
    assert (grouping["first_code"], grouping["last_code"], grouping["has_codes"]) == ("C00", "C96", False)
    used_sections = {row["section_id"] for row in tabular_2026.codes}
    assert used_sections == {row["section_id"] for row in tabular_2026.sections if row["has_codes"]}


# ------------------------------------------------------------------------------------------- codes


def test_hierarchy_and_billability_of_a_diabetes_code(tabular_2026: TabularRelease) -> None:
    codes = codes_by_name(tabular_2026)
    foot_ulcer = codes["E11.621"]
    assert foot_ulcer["description"] == "Type 2 diabetes mellitus with foot ulcer"
    assert foot_ulcer["parent_code"] == "E11.62"
    assert foot_ulcer["billable"] is True
    assert (foot_ulcer["depth"], foot_ulcer["chapter"], foot_ulcer["section_id"]) == (4, 4, "E08-E13")
    assert codes["E11.62"]["billable"] is False
    assert codes["E11.62"]["parent_code"] == "E11.6"
    assert codes["E11"]["parent_code"] is None
    assert codes["E11"]["depth"] == 1


def test_low_back_pain_became_a_header_between_fy2021_and_fy2026(
    tabular_2021: TabularRelease, tabular_2026: TabularRelease
) -> None:
    old, new = codes_by_name(tabular_2021), codes_by_name(tabular_2026)
    assert old["M54.5"]["billable"] is True
    assert new["M54.5"]["billable"] is False
    for child in ("M54.50", "M54.51", "M54.59"):
        assert child not in old
        assert new[child]["parent_code"] == "M54.5"
        assert new[child]["billable"] is True
    # The inclusion terms moved from M54.5 down to M54.50.
    assert old["M54.5"]["inclusion_terms"] == ["Loin pain", "Lumbago NOS"]
    assert new["M54.50"]["inclusion_terms"] == ["Loin pain", "Lumbago NOS"]
    assert new["M54.5"]["inclusion_terms"] is None


def test_inclusion_terms_and_excludes1_match_the_xml_text(
    cms_dir: Path, tabular_2021: TabularRelease
) -> None:
    raw = (cms_dir / TABULAR_2021).read_text(encoding="utf-8")
    low_back_pain = codes_by_name(tabular_2021)["M54.5"]
    oracle = raw_own_notes(raw, "M54.5")
    assert low_back_pain["inclusion_terms"] == oracle["inclusion_terms"]
    assert low_back_pain["excludes1"] == oracle["excludes1"]
    assert "lumbago with sciatica (M54.4-)" in low_back_pain["excludes1"]


def test_every_note_column_matches_the_xml_text_on_a_sample(
    cms_dir: Path, tabular_2026: TabularRelease
) -> None:
    raw = (cms_dir / TABULAR_2026).read_text(encoding="utf-8")
    sample = [row for row in tabular_2026.codes if row["seventh_character"] is None][::97]
    compared = 0
    for row in sample:
        oracle = raw_own_notes(raw, row["code"])
        for column in NOTE_COLUMNS.values():
            assert row[column] == (oracle.get(column) or None), (row["code"], column)
            compared += row[column] is not None
    assert compared > 50


def test_seventh_character_is_inherited_from_the_category(
    tabular_2026: TabularRelease, cms_dir: Path
) -> None:
    codes = codes_by_name(tabular_2026)
    femur_neck = codes["S72.001"]
    assert femur_neck["requires_seventh_character"] is True
    assert femur_neck["billable"] is False
    assert femur_neck["seven_chr_def"] is None
    assert femur_neck["seven_chr_def_from"] == "S72"
    femur = codes["S72"]
    raw = (cms_dir / TABULAR_2026).read_text(encoding="utf-8")
    s72_block = raw[raw.index("<name>S72</name>"):raw.index("<name>S72.0</name>")]
    raw_extensions = dict(re.findall(r'<extension char="(.)">(.*?)</extension>', s72_block))
    assert femur["seven_chr_def"] == raw_extensions
    assert femur["seven_chr_def"]["A"] == "initial encounter for closed fracture"
    assert femur["seven_chr_def_notes"] == ["initial encounter for open fracture NOS"]
    assert femur["seven_chr_note"] == (
        "The appropriate 7th character is to be added to all codes from category S72"
    )


def test_subcategory_seventh_character_and_full_length_leaves(tabular_2026: TabularRelease) -> None:
    codes = codes_by_name(tabular_2026)
    # E08.32 defines laterality 7th characters for its own subtree only.
    assert codes["E08.32"]["seven_chr_def"] == {
        "1": "right eye", "2": "left eye", "3": "bilateral", "9": "unspecified eye",
    }
    assert codes["E08.321"]["requires_seventh_character"] is True
    assert codes["E08.321"]["billable"] is False
    assert codes["E08.311"]["requires_seventh_character"] is False
    assert codes["E08.311"]["billable"] is True
    # Leaves already 7 characters long never need another.
    seven_long = [row for row in tabular_2026.codes
                  if len(row["code"].replace(".", "")) == 7 and row["seventh_character"] is None]
    assert seven_long and all(not row["requires_seventh_character"] for row in seven_long)


def test_placeholder_diags_are_flagged(tabular_2026: TabularRelease, cms_dir: Path) -> None:
    raw = (cms_dir / TABULAR_2026).read_text(encoding="utf-8")
    placeholders = [row for row in tabular_2026.codes if row["is_placeholder"] and row["seventh_character"] is None]
    assert len(placeholders) == raw.count('<diag placeholder="true">')
    assert codes_by_name(tabular_2026)["H21.1X"]["is_placeholder"] is True


# ------------------------------------------------------------------------------------------- order file


def test_order_file_rows(cms_dir: Path, order_2021: list[dict]) -> None:
    lines = (cms_dir / ORDER_2021).read_bytes().split(b"\r\n")
    assert len(order_2021) == sum(1 for line in lines if line.strip())
    assert order_2021[1] == {
        "order_number": 2,
        "code": "A00.0",
        "billable": True,
        "short_description": "Cholera due to Vibrio cholerae 01, biovar cholerae",
        "long_description": "Cholera due to Vibrio cholerae 01, biovar cholerae",
    }
    by_code = {row["code"]: row for row in order_2021}
    fracture = by_code["S72.001B"]
    assert fracture["billable"] is True
    assert fracture["short_description"] == "Fx unsp part of neck of r femur, init for opn fx type I/2"
    assert fracture["long_description"] == (
        "Fracture of unspecified part of neck of right femur, "
        "initial encounter for open fracture type I or II"
    )
    assert [row["order_number"] for row in order_2021] == list(range(1, len(order_2021) + 1))


def test_order_file_billable_flags_agree_with_the_tabular(
    tabular_2021: TabularRelease, order_2021: list[dict]
) -> None:
    tabular = codes_by_name(tabular_2021)
    order = {row["code"]: row for row in order_2021}
    # Every code, the 7th-character forms written from the Tabular's definitions included, is in the order file
    # with the same billable flag, and the order file has no code more.
    assert tabular.keys() == order.keys()
    disagreements = sorted(code for code in tabular if tabular[code]["billable"] != order[code]["billable"])
    assert disagreements == []
    for code, row in tabular.items():
        if row["seventh_character"] is not None:
            assert tabular[row["parent_code"]]["requires_seventh_character"] is True, code
            # the same words as CDC's, but for the accents the order file leaves out ("Brown-Sequard")
            assert unicodedata.normalize("NFKD", row["description"]).encode("ascii", "ignore").decode() == \
                order[code]["long_description"], code


def test_seventh_character_forms_follow_the_category_definition_and_its_exceptions(
    tabular_2026: TabularRelease,
) -> None:
    codes = codes_by_name(tabular_2026)
    forms = {code: row for code, row in codes.items() if row["parent_code"] == "T39.1X1" and row["seventh_character"]}
    assert list(forms) == ["T39.1X1A", "T39.1X1D", "T39.1X1S"]
    assert forms["T39.1X1A"]["description"] == (
        "Poisoning by 4-Aminophenol derivatives, accidental (unintentional), initial encounter")
    assert codes["W01.0XXA"]["parent_code"] == "W01.0" and codes["W01.0XXA"]["is_placeholder"] is True
    # S06: "7th characters D and S do not apply to codes in category S06 with 6th character 7 ... or 8"
    assert "S06.1X7A" in codes and "S06.1X7D" not in codes and "S06.1X8S" not in codes
    assert {"S06.1X6A", "S06.1X6D", "S06.1X6S"} <= codes.keys()
    assert seventh_character_exceptions(["7th characters D and S do not apply to codes in category S06 with 6th "
                                         "character 7 - death due to brain injury, or 8 - death due to other cause"]
                                        ) == {"7": {"D", "S"}, "8": {"D", "S"}}


def test_order_file_marks_7th_character_forms_by_their_description(order_2021: list[dict]) -> None:
    codes = {row["code"]: row for row in codes_from_order(order_2021)}
    assert codes["S72.001A"]["seventh_character"] == "A" and codes["S72.001A"]["parent_code"] == "S72.001"
    assert codes["S72.001"]["seventh_character"] is None
    assert codes["E11.9"]["seventh_character"] is None


def test_bad_order_line_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "icd10cm-order-broken.txt"
    bad.write_bytes(b"00001 A00     0 Cholera" + b" " * 53 + b"Cholera\r\n00002 A000    7 Cholera due to\r\n")
    with pytest.raises(Icd10cmFormatError, match=r"icd10cm-order-broken\.txt: line 2 "):
        parse_order_file(bad)


def test_dot_formatting() -> None:
    assert dotted_icd10cm("E11621") == "E11.621"
    assert dotted_icd10cm("A00") == "A00"
    assert dotted_icd10cm("S72001A") == "S72.001A"


# ------------------------------------------------------------------------------------------- hostile input

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE ICD10CM.tabular [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<ICD10CM.tabular><version>&lol4;</version></ICD10CM.tabular>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE ICD10CM.tabular [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<ICD10CM.tabular><version>&secret;</version></ICD10CM.tabular>
"""


@pytest.mark.parametrize(
    ("file_name", "content"), [("bomb.xml", BILLION_LAUGHS), ("xxe.xml", EXTERNAL_ENTITY)]
)
def test_entity_attacks_are_refused(tmp_path: Path, file_name: str, content: str) -> None:
    hostile = tmp_path / file_name
    hostile.write_text(content, encoding="utf-8")
    with pytest.raises(Icd10cmFormatError, match=re.escape(str(hostile))) as caught:
        parse_tabular(hostile)
    assert "entity" in str(caught.value)
    assert isinstance(caught.value, MedragError)


def test_truncated_tabular_is_refused(tmp_path: Path, cms_dir: Path) -> None:
    truncated = tmp_path / "icd10cm_tabular_truncated.xml"
    truncated.write_bytes((cms_dir / TABULAR_2026).read_bytes()[:200_000])
    with pytest.raises(Icd10cmFormatError, match=r"icd10cm_tabular_truncated\.xml: not well-formed XML"):
        parse_tabular(truncated)


def test_wrong_root_and_missing_code_name_are_refused(tmp_path: Path) -> None:
    wrong_root = tmp_path / "other.xml"
    wrong_root.write_text("<ICD10PCS.tabular/>", encoding="utf-8")
    with pytest.raises(Icd10cmFormatError, match=r"other\.xml: root element is <ICD10PCS\.tabular>"):
        parse_tabular(wrong_root)
    nameless = tmp_path / "nameless.xml"
    nameless.write_text(
        "<ICD10CM.tabular><chapter><name>1</name><desc>x</desc><section id='A00-A09'><desc>y</desc>"
        "<diag><desc>no name</desc></diag></section></chapter></ICD10CM.tabular>",
        encoding="utf-8",
    )
    with pytest.raises(Icd10cmFormatError, match=r"nameless\.xml: a <diag> under A00-A09 has no <name>"):
        parse_tabular(nameless)


# ------------------------------------------------------------------------------------------- discovery

CODE_TABLES_ZIP = [
    "icd10cm-tabular-2026.xml",
    "icd10cm-tabular-2026.pdf",
    "icd10cm-index-2026.xml",
    "icd10cm-drug-2026.xml",
    "icd10cm-neoplasm-2026.xml",
    "icd10cm-order-2026.txt",
    "icd10cm-order-addenda-2026.txt",
    "__MACOSX/._icd10cm-tabular-2026.xml",
]


def test_zip_member_discovery() -> None:
    assert find_tabular_member(CODE_TABLES_ZIP) == "icd10cm-tabular-2026.xml"
    assert find_order_member(CODE_TABLES_ZIP) == "icd10cm-order-2026.txt"
    assert find_tabular_member(["Table and Index/icd10cm_tabular_2021.xml"]) == (
        "Table and Index/icd10cm_tabular_2021.xml"
    )
    assert find_order_member(["icd10cm_tabular_2021.xml"]) is None


def test_zip_member_discovery_errors_name_the_archive() -> None:
    with pytest.raises(Icd10cmFormatError, match=r"2026-code-tables\.zip: no \*tabular\*\.xml member"):
        find_tabular_member(["icd10cm-index-2026.xml"], archive_name="2026-code-tables.zip")
    with pytest.raises(Icd10cmFormatError, match="several tabular XML members"):
        find_tabular_member(["a/icd10cm_tabular_2026.xml", "b/icd10cm_tabular_2025.xml"])


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("icd10cm_tabular_2026.xml", "FY2026"),
        ("icd10c-tabular-April-1-2026.xml", "FY2026"),
        ("2026-code-tables.zip", "FY2026"),
        ("icd10cm-order-Jan-2021.txt", "FY2021"),
        ("2026", "FY2026"),
        ("FY 2025 ICD-10-CM update, posted 2024", "FY2025"),
        ("icd10cm-tabular.xml", None),
        ("codes-2025-2026.zip", None),
    ],
)
def test_fiscal_year_label(text: str, label: str | None) -> None:
    assert fiscal_year_label(text) == label
