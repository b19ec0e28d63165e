"""Medicare Coverage Database (MCD) CSV exports: reading, per-table specs, typed rows and NCD documents.

The MCD bulk download ships one zip per part ("ncd", "current_lcd", "current_article"), each holding a
``*_csv.zip`` of tables. The files are cp1252 with CRLF record ends, bare LF inside quoted HTML narratives,
and one member (``lcd_x_requestor_letters.csv``) without a header row. Every table we know is described in
``MCD_TABLES`` so that the loader can create and fill ``mcd_<member stem>`` tables without guessing.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path, PurePath, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection

from medrag.core.errors import MedragError
from medrag.ingest.archive import extract_nested
from medrag.ingest.copy import copy_rows
from medrag.ingest.links import page_links
from medrag.ingest.releases import LoadReport
from medrag.sources.common import GetPage, ReleaseCandidate, RemoteFile
from medrag.sources.htmltext import html_to_text

PARTS: tuple[str, ...] = ("ncd", "lcd", "article")
COLUMN_TYPES: frozenset[str] = frozenset({"text", "integer", "timestamp", "boolean", "date"})

_INT4_MIN, _INT4_MAX = -(2**31), 2**31 - 1
_INTEGER = re.compile(r"[+-]?\d+")
# The exports write "2024-05-27 00:00:00" and "2018-02-14 21:01:17.937000000" (nanoseconds).
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
)
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
# Narratives reach 32K characters today; the csv module's default cap (128K) is too close for comfort.
_MAX_FIELD_CHARS = 16 * 1024 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"


class McdFormatError(MedragError):
    """An MCD export file or value does not have the shape the data dictionary promises."""


@dataclass(frozen=True)
class TableSpec:
    """How one CSV member of an MCD export maps onto one Postgres table."""

    member: str
    table: str
    part: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    has_header: bool = True
    # Lookup tables that the LCD and Article exports both carry, with identical content.
    shared_with: tuple[str, ...] = ()

    @property
    def column_names(self) -> list[str]:
        """Column names in table order."""
        return [name for name, _ in self.columns]

    @property
    def parts(self) -> tuple[str, ...]:
        """Every export part whose zip carries this member."""
        return (self.part, *self.shared_with)


def _table(
    part: str,
    stem: str,
    columns: str,
    key: Iterable[str],
    *,
    has_header: bool = True,
    shared_with: tuple[str, ...] = (),
) -> TableSpec:
    """Build a TableSpec from a compact "name type, name type, ..." column list."""
    parsed: list[tuple[str, str]] = []
    for item in columns.split(","):
        name, column_type = item.split()
        if column_type not in COLUMN_TYPES:
            raise ValueError(f"{stem}: unknown column type {column_type!r} for {name}")
        parsed.append((name, column_type))
    names = [name for name, _ in parsed]
    key = tuple(key)
    if len(set(names)) != len(names) or not set(key) <= set(names):
        raise ValueError(f"{stem}: duplicate columns or key columns missing from {names}")
    return TableSpec(
        member=f"{stem}.csv",
        table=f"mcd_{stem}",
        part=part,
        columns=tuple(parsed),
        key=key,
        has_header=has_header,
        shared_with=shared_with,
    )


_ALSO_IN_ARTICLE_EXPORT = ("article",)

# Column names follow the real export headers (which sometimes differ from the data dictionary PDFs:
# update_period has dis_end_date, contractor has contractor_subtype_id, lcd has last_reviewed_on).
# Types were checked against every value of the NCD and LCD files; "*_num" revision identifiers such as
# rev_hist_num stay text because contractors write them like "R7".
_SPECS: list[TableSpec] = [
    # --- NCD export (ncd data dictionary.pdf) -------------------------------------------------------------
    _table("ncd", "ncd_bnft_ctgry_ref", "bnft_ctgry_cd integer, bnft_ctgry_desc text", ["bnft_ctgry_cd"]),
    _table("ncd", "ncd_pblctn_ref", "pblctn_cd integer, pblctn_num text, pblctn_title text", ["pblctn_cd"]),
    _table(
        "ncd",
        "ncd_trkg",
        """ncd_id integer, ncd_vrsn_num integer, natl_cvrg_type boolean, cvrg_lvl_cd integer,
        ncd_mnl_sect text, ncd_mnl_sect_title text, ncd_efctv_dt timestamp, ncd_impltn_dt timestamp,
        ncd_trmntn_dt timestamp, itm_srvc_desc text, indctn_lmtn text, xref_txt text, othr_txt text,
        trnsmtl_num integer, trnsmtl_issnc_dt timestamp, trnsmtl_url text, chg_rqst_num integer,
        pblctn_cd integer, rev_hstry text, under_rvw boolean, creatd_tmstmp timestamp,
        last_updt_tmstmp timestamp, last_clrnc_tmstmp timestamp, ncd_lab boolean, ncd_keyword text,
        ncd_ama boolean""",
        ["ncd_id", "ncd_vrsn_num"],
    ),
    _table(
        "ncd",
        "ncd_trkg_bnft_xref",
        """ncd_id integer, ncd_vrsn_num integer, bnft_ctgry_cd integer, creatd_tmstmp timestamp,
        last_updt_tmstmp timestamp""",
        ["ncd_id", "ncd_vrsn_num", "bnft_ctgry_cd"],
    ),
    # --- LCD export (lcd data dictionary.pdf) -------------------------------------------------------------
    _table(
        "lcd",
        "lcd",
        """lcd_id integer, lcd_version integer, title text, determination_number text,
        orig_det_eff_date timestamp, ent_det_end_date timestamp, rev_eff_date timestamp,
        rev_end_date timestamp, indication text, diagnoses_support text, icd9_dont_support_para text,
        icd9_dont_support_ast text, diagnoses_dont_support text, coding_guidelines text, doc_reqs text,
        appendices text, util_guide text, source_info text, adv_meeting text, comment_start_dt timestamp,
        comment_end_dt timestamp, notice_start_dt timestamp, rev_hist_num text, history_exp text,
        last_reviewed_on timestamp, status text, last_updated timestamp, cms_cov_policy text,
        display_id integer, draft_contact integer, revenue_para text, thirty_percent text, keywords text,
        associated_info text, notice_end_dt timestamp, date_retired timestamp,
        draft_released_date timestamp, source_lcd_id integer, add_icd10_info text, icd10_doc text,
        synopsis_changes text, bibliography text, summary_of_evidence text, analysis_of_evidence text,
        mcd_publish_date timestamp, issue text, issue_change text, mac_initiated text""",
        ["lcd_id", "lcd_version"],
    ),
    _table(
        "lcd",
        "draft_contact_lookup",
        """contact_id integer, email_address text, first_name text, middle_initial text, last_name text,
        phone text, address1 text, address2 text, address3 text, city text, state_id integer, zipcode text,
        last_updated timestamp, p_ext text""",
        ["contact_id"],
    ),
    _table(
        "lcd",
        "reason_change_lookup",
        """reason_change_id integer, reason_change_version integer, description text,
        last_updated timestamp, sort_order integer""",
        ["reason_change_id", "reason_change_version"],
    ),
    _table(
        "lcd",
        "lcd_x_reason_change",
        """lcd_id integer, lcd_version integer, reason_change_id integer, reason_change_version integer,
        last_updated timestamp, reason_change_other text""",
        ["lcd_id", "lcd_version", "reason_change_id", "reason_change_version"],
    ),
    _table(
        "lcd",
        "lcd_x_primary_jurisdiction",
        "lcd_id integer, lcd_version integer, state_id integer, last_updated timestamp",
        ["lcd_id", "lcd_version", "state_id"],
    ),
    _table("lcd", "state_x_region", "state_id integer, region_id integer", ["state_id"],
           shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table("lcd", "region_lookup", "region_id integer, description text", ["region_id"],
           shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table(
        "lcd",
        "dmerc_region_lookup",
        """region_id integer, description text, psc_description text, mac_description text,
        super_mac_description text""",
        ["region_id"],
        shared_with=_ALSO_IN_ARTICLE_EXPORT,
    ),
    _table("lcd", "state_lookup", "state_id integer, state_abbrev text, description text", ["state_id"],
           shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table(
        "lcd",
        "lcd_x_contractor",
        """lcd_id integer, lcd_version integer, contractor_id integer, contractor_type_id integer,
        contractor_version integer, last_updated timestamp""",
        ["lcd_id", "lcd_version", "contractor_id", "contractor_type_id", "contractor_version"],
    ),
    _table(
        "lcd",
        "contractor",
        """contractor_id integer, contractor_type_id integer, contractor_version integer,
        contractor_bus_name text, contractor_number text, dmerc_rgn integer, address1 text, address2 text,
        address3 text, city text, state_id integer, zipcode text, phone text, fax text, status text,
        last_updated timestamp, url text, email text, ignore text, status_flag text, cmd_name text,
        cmd_title text, contractor_subtype_id integer""",
        ["contractor_id", "contractor_type_id", "contractor_version"],
        shared_with=_ALSO_IN_ARTICLE_EXPORT,
    ),
    _table(
        "lcd",
        "contractor_jurisdiction",
        """contractor_id integer, contractor_type_id integer, contractor_version integer, state_id integer,
        last_updated timestamp, active_date timestamp, term_date timestamp""",
        ["contractor_id", "contractor_type_id", "contractor_version", "state_id"],
        shared_with=_ALSO_IN_ARTICLE_EXPORT,
    ),
    _table("lcd", "contractor_type_lookup", "contractor_type_id integer, description text",
           ["contractor_type_id"], shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table("lcd", "contractor_subtype_lookup", "contractor_subtype_id integer, description text",
           ["contractor_subtype_id"], shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table(
        "lcd",
        "contractor_oversight",
        """contractor_id integer, contractor_type_id integer, contractor_version integer,
        region_id integer, last_updated timestamp""",
        ["contractor_id", "contractor_type_id", "contractor_version", "region_id"],
        shared_with=_ALSO_IN_ARTICLE_EXPORT,
    ),
    _table(
        "lcd",
        "lcd_x_hcpc_code",
        """lcd_id integer, lcd_version integer, hcpc_code_id text, hcpc_code_version integer,
        hcpc_code_group integer, range text, last_updated timestamp, long_description text,
        short_description text""",
        ["lcd_id", "lcd_version", "hcpc_code_id", "hcpc_code_version", "hcpc_code_group"],
    ),
    _table(
        "lcd",
        "lcd_x_hcpc_code_group",
        "lcd_id integer, lcd_version integer, hcpc_code_group integer, paragraph text, last_updated timestamp",
        ["lcd_id", "lcd_version", "hcpc_code_group"],
    ),
    _table("lcd", "lcd_future_retire", "lcd_id integer, retire_dt timestamp", ["lcd_id"]),
    _table("lcd", "update_period", "period_id integer, begin_date timestamp, dis_end_date timestamp",
           ["period_id"], shared_with=_ALSO_IN_ARTICLE_EXPORT),
    _table(
        "lcd",
        "lcd_related_documents",
        """lcd_id integer, lcd_version integer, related_num integer, r_article_id integer,
        r_article_version integer, r_lcd_id integer, r_lcd_version integer, r_contractor_id integer,
        last_updated timestamp""",
        ["lcd_id", "lcd_version", "related_num"],
    ),
    _table(
        "lcd",
        "lcd_related_ncd_documents",
        """lcd_id integer, lcd_version integer, related_num integer, r_ncd_id integer,
        r_ncd_version integer, last_updated timestamp""",
        ["lcd_id", "lcd_version", "related_num"],
    ),
    _table(
        "lcd",
        "lcd_related_source_icd9",
        """lcd_id integer, lcd_version integer, related_num integer, source_lcd_id integer,
        last_updated timestamp""",
        ["lcd_id", "lcd_version", "related_num"],
    ),
    _table(
        "lcd",
        "lcd_x_advisory_committee",
        """lcd_id integer, lcd_version integer, meeting_id integer, meeting_date timestamp,
        meeting_info text, sort_order integer, last_updated timestamp""",
        ["lcd_id", "lcd_version", "meeting_id"],
    ),
    _table(
        "lcd",
        "lcd_x_revision_history",
        """lcd_id integer, lcd_version integer, rev_hist_num text, rev_hist_date timestamp,
        rev_hist_exp text, last_updated timestamp""",
        ["lcd_id", "lcd_version", "rev_hist_num"],
    ),
    _table(
        "lcd",
        "synopsis_changes_fields_lookup",
        """synopsis_changes_field_id integer, field_name text, field_anchor text, mcd_field_name text,
        mcd_field_anchor text""",
        ["synopsis_changes_field_id"],
    ),
    _table(
        "lcd",
        "lcd_x_synopsis_changes_fields",
        "lcd_id integer, lcd_version integer, synopsis_changes_field_id integer, last_updated timestamp",
        ["lcd_id", "lcd_version", "synopsis_changes_field_id"],
    ),
    _table(
        "lcd",
        "lcd_x_urls",
        """lcd_id integer, lcd_version integer, url_type_id integer, url_id integer, url text,
        url_name text, sort_order integer, last_updated timestamp, url_description text""",
        ["lcd_id", "lcd_version", "url_type_id", "url_id"],
    ),
    _table(
        "lcd",
        "lcd_url_type_lookup",
        "url_type_id integer, description text, sort_order integer, last_updated timestamp",
        ["url_type_id"],
    ),
    _table(
        "lcd",
        "lcd_x_sticky_note",
        """lcd_id integer, lcd_version integer, sticky_note_version integer, sticky_note text,
        sticky_note_dt timestamp, sticky_note_posting_dt timestamp""",
        ["lcd_id", "lcd_version", "sticky_note_version"],
    ),
    # The export writes this member without its header row; the order is the data dictionary's.
    _table(
        "lcd",
        "lcd_x_requestor_letters",
        """lcd_id integer, lcd_version integer, letter_id integer, requestor_name text, letter_path text,
        size integer, sort_order integer, last_updated timestamp""",
        ["lcd_id", "lcd_version", "letter_id"],
        has_header=False,
    ),
    # --- Article export (current_article_csv) ---------------------------------------------------------
    # No Article data dictionary or file ships with this project's corpus: names follow the headers of
    # real current_article_csv exports and types follow the LCD conventions (codes such as ICD-10,
    # HCPCS, revenue and bill codes are text). convert_row reports any value that disagrees.
    _table(
        "article",
        "article",
        """article_id integer, article_version integer, article_type integer, title text,
        article_pub_date timestamp, article_eff_date timestamp, article_end_date timestamp,
        description text, other_comments text, sad_url text, status text, last_updated timestamp,
        history_exp text, key_article text, icd9_covered_para text, icd9_noncovered_para text,
        revenue_para text, thirty_percent text, article_rev_end_date timestamp, source_article_id integer,
        date_retired timestamp, keywords text, icd10_doc text, add_icd10_info text, cms_cov_policy text,
        display_id integer, reference_article text""",
        ["article_id", "article_version"],
    ),
    _table("article", "article_future_retire", "article_id integer, retire_dt timestamp", ["article_id"]),
    _table(
        "article",
        "article_related_documents",
        """article_id integer, article_version integer, related_num integer, r_article_id integer,
        r_article_version integer, r_lcd_id integer, r_lcd_version integer, r_contractor_id integer,
        last_updated timestamp""",
        ["article_id", "article_version", "related_num"],
    ),
    _table(
        "article",
        "article_related_ncd_documents",
        """article_id integer, article_version integer, related_num integer, r_ncd_id integer,
        r_ncd_version integer, last_updated timestamp""",
        ["article_id", "article_version", "related_num"],
    ),
    _table(
        "article",
        "article_related_source_icd9",
        """article_id integer, article_version integer, related_num integer, source_article_id integer,
        last_updated timestamp""",
        ["article_id", "article_version", "related_num"],
    ),
    _table(
        "article",
        "article_type_lookup",
        "article_type_id integer, description text, last_updated timestamp",
        ["article_type_id"],
    ),
    _table(
        "article",
        "article_url_type_lookup",
        "url_type_id integer, description text, sort_order integer, last_updated timestamp",
        ["url_type_id"],
    ),
    _table(
        "article",
        "article_x_bill_code",
        """article_id integer, article_version integer, bill_code_id text, bill_code_version integer,
        last_updated timestamp, description text""",
        ["article_id", "article_version", "bill_code_id", "bill_code_version"],
    ),
    _table(
        "article",
        "article_x_code_table",
        """article_id integer, article_version integer, article_type integer, code_table_row integer,
        brand_name text, eff_date timestamp, end_date timestamp, comments text, hcpc_code_id text,
        hcpc_code_version integer, last_updated timestamp, short_description text, long_description text""",
        ["article_id", "article_version", "code_table_row"],
    ),
    _table(
        "article",
        "article_x_contractor",
        """article_id integer, article_version integer, article_type integer, contractor_id integer,
        contractor_type_id integer, contractor_version integer, last_updated timestamp""",
        ["article_id", "article_version", "contractor_id", "contractor_type_id", "contractor_version"],
    ),
    _table(
        "article",
        "article_x_hcpc_code",
        """article_id integer, article_version integer, hcpc_code_id text, hcpc_code_version integer,
        hcpc_code_group integer, range text, last_updated timestamp, long_description text,
        short_description text""",
        ["article_id", "article_version", "hcpc_code_id", "hcpc_code_version", "hcpc_code_group"],
    ),
    _table(
        "article",
        "article_x_hcpc_code_group",
        """article_id integer, article_version integer, hcpc_code_group integer, paragraph text,
        last_updated timestamp""",
        ["article_id", "article_version", "hcpc_code_group"],
    ),
    _table(
        "article",
        "article_x_hcpc_modifier",
        """article_id integer, article_version integer, hcpc_modifier_code_id text,
        hcpc_modifier_code_version integer, hcpc_modifier_group integer, last_updated timestamp,
        description text""",
        ["article_id", "article_version", "hcpc_modifier_code_id", "hcpc_modifier_code_version",
         "hcpc_modifier_group"],
    ),
    _table(
        "article",
        "article_x_hcpc_modifier_group",
        """article_id integer, article_version integer, hcpc_modifier_group integer, paragraph text,
        last_updated timestamp""",
        ["article_id", "article_version", "hcpc_modifier_group"],
    ),
    _table(
        "article",
        "article_x_icd10_covered",
        """article_id integer, article_version integer, icd10_code_id text, icd10_code_version integer,
        icd10_covered_group integer, range text, last_updated timestamp, sort_order integer,
        description text, asterisk text""",
        ["article_id", "article_version", "icd10_code_id", "icd10_code_version", "icd10_covered_group"],
    ),
    _table(
        "article",
        "article_x_icd10_covered_group",
        """article_id integer, article_version integer, icd10_covered_group integer, paragraph text,
        last_updated timestamp, icd10_covered_ast text""",
        ["article_id", "article_version", "icd10_covered_group"],
    ),
    _table(
        "article",
        "article_x_icd10_noncovered",
        """article_id integer, article_version integer, icd10_code_id text, icd10_code_version integer,
        icd10_noncovered_group integer, range text, last_updated timestamp, sort_order integer,
        description text""",
        ["article_id", "article_version", "icd10_code_id", "icd10_code_version", "icd10_noncovered_group"],
    ),
    _table(
        "article",
        "article_x_icd10_noncovered_group",
        """article_id integer, article_version integer, icd10_noncovered_group integer, paragraph text,
        last_updated timestamp""",
        ["article_id", "article_version", "icd10_noncovered_group"],
    ),
    _table(
        "article",
        "article_x_icd10_pcs_code",
        """article_id integer, article_version integer, range text, last_updated timestamp,
        sort_order integer, icd10_pcs_code_id text, icd10_pcs_code_version integer,
        icd10_pcs_code_group integer, description text""",
        ["article_id", "article_version", "icd10_pcs_code_id", "icd10_pcs_code_version",
         "icd10_pcs_code_group"],
    ),
    _table(
        "article",
        "article_x_icd10_pcs_code_group",
        """article_id integer, article_version integer, last_updated timestamp,
        icd10_pcs_code_group integer, paragraph text""",
        ["article_id", "article_version", "icd10_pcs_code_group"],
    ),
    _table(
        "article",
        "article_x_other_coding_group",
        """article_id integer, article_version integer, other_coding_group integer, paragraph text,
        codes text, last_updated timestamp""",
        ["article_id", "article_version", "other_coding_group"],
    ),
    _table(
        "article",
        "article_x_primary_jurisdiction",
        "article_id integer, article_version integer, state_id integer, last_updated timestamp",
        ["article_id", "article_version", "state_id"],
    ),
    _table(
        "article",
        "article_x_response_to_comment",
        """article_id integer, article_version integer, rtc_num integer, comment text, response text,
        last_updated timestamp""",
        ["article_id", "article_version", "rtc_num"],
    ),
    _table(
        "article",
        "article_x_revenue_code",
        """article_id integer, article_version integer, revenue_code_id text, revenue_code_version integer,
        range text, last_updated timestamp, description text""",
        ["article_id", "article_version", "revenue_code_id", "revenue_code_version"],
    ),
    _table(
        "article",
        "article_x_revision_history",
        """article_id integer, article_version integer, rev_hist_num text, rev_hist_date timestamp,
        rev_hist_exp text, last_updated timestamp""",
        ["article_id", "article_version", "rev_hist_num"],
    ),
    _table(
        "article",
        "article_x_sticky_note",
        """article_id integer, article_version integer, sticky_note_version integer, sticky_note text,
        sticky_note_dt timestamp, sticky_note_posting_dt timestamp""",
        ["article_id", "article_version", "sticky_note_version"],
    ),
    _table(
        "article",
        "article_x_urls",
        """article_id integer, article_version integer, url_type_id integer, url_id integer, url text,
        url_name text, sort_order integer, last_updated timestamp, url_description text""",
        ["article_id", "article_version", "url_type_id", "url_id"],
    ),
]

MCD_TABLES: dict[str, TableSpec] = {spec.table: spec for spec in _SPECS}
_SPECS_BY_MEMBER: dict[str, TableSpec] = {spec.member: spec for spec in _SPECS}


def spec_for_member(member_name: str) -> TableSpec:
    """The spec of a CSV member, given its file name or a path ending in it (case-insensitive)."""
    name = PurePath(member_name).name.lower()
    spec = _SPECS_BY_MEMBER.get(name)
    if spec is None:
        raise McdFormatError(f"{member_name}: not a known MCD export table")
    return spec


def _check_part(part: str) -> None:
    if part not in PARTS:
        raise ValueError(f"unknown MCD part {part!r}; expected one of {', '.join(PARTS)}")


def expected_members(part: str) -> list[str]:
    """CSV member names that a complete export of `part` ('ncd', 'lcd', 'article') carries."""
    _check_part(part)
    return sorted(spec.member for spec in _SPECS if part in spec.parts)


def find_missing_members(part: str, present_names: list[str]) -> list[str]:
    """Expected CSV members of `part` that are absent from `present_names` (names or paths)."""
    present = {PurePath(name).name.lower() for name in present_names}
    return [member for member in expected_members(part) if member not in present]


def find_unknown_members(part: str, present_names: list[str]) -> list[str]:
    """CSV members in `present_names` that no spec of `part` describes (a new table CMS added)."""
    expected = set(expected_members(part))
    return sorted(
        PurePath(name).name
        for name in present_names
        if PurePath(name).suffix.lower() == ".csv" and PurePath(name).name.lower() not in expected
    )


# --- reading -----------------------------------------------------------------------------------------------


def _decode(path: Path, data: bytes) -> str:
    """cp1252-decode a whole export file, naming the line of the first byte cp1252 does not define."""
    if data.startswith(_UTF8_BOM):
        # A BOM means the file was re-saved as UTF-8, whatever the export normally uses.
        encoding, data, offset = "utf-8", data[len(_UTF8_BOM):], len(_UTF8_BOM)
    else:
        encoding, offset = "cp1252", 0
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise McdFormatError(
            f"{path}: line {line}: byte 0x{data[exc.start]:02x} at offset {exc.start + offset} "
            f"is not valid {encoding}"
        ) from exc


def _iter_records(path: Path, header: list[str] | None) -> Iterator[tuple[int, dict[str, str | None]]]:
    """Yield (first line number, row dict) for every record of an MCD CSV file."""
    text = _decode(path, Path(path).read_bytes())
    if csv.field_size_limit() < _MAX_FIELD_CHARS:
        csv.field_size_limit(_MAX_FIELD_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    names = [name.strip().lower() for name in header] if header is not None else None
    previous_line = 0
    first_record = True
    try:
        for record in reader:
            start_line, previous_line = previous_line + 1, reader.line_num
            if not record or record == [""]:
                continue
            if names is None:
                names = _header_names(path, record)
                first_record = False
                continue
            if first_record and [value.strip().lower() for value in record] == names:
                # A member exported without a header row may gain one in a later release.
                first_record = False
                continue
            first_record = False
            if len(record) != len(names):
                raise McdFormatError(
                    f"{path}: line {start_line}: {len(record)} fields where the header has {len(names)}"
                )
            values = [value if value != "" else None for value in record]
            yield start_line, dict(zip(names, values, strict=True))
    except csv.Error as exc:
        raise McdFormatError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from exc


def _header_names(path: Path, record: list[str]) -> list[str]:
    names = [value.strip().lower() for value in record]
    if any(not name for name in names) or len(set(names)) != len(names):
        raise McdFormatError(f"{path}: line 1: header has empty or repeated column names: {record}")
    return names


def read_mcd_csv(path: Path, *, header: list[str] | None = None) -> list[dict]:
    """Read an MCD export CSV (cp1252) into dicts with lower-cased keys and None for empty fields."""
    return [row for _, row in _iter_records(path, header)]


def read_table(path: Path, spec: TableSpec) -> list[dict]:
    """Read one member with its spec: typed rows, errors naming file and line, unique natural keys."""
    header = None if spec.has_header else spec.column_names
    rows: list[dict] = []
    seen: dict[tuple, int] = {}
    for line, raw in _iter_records(path, header):
        try:
            row = convert_row(spec, raw)
        except McdFormatError as exc:
            raise McdFormatError(f"{path}: line {line}: {exc}") from exc
        key = tuple(row[name] for name in spec.key)
        if key in seen:
            raise McdFormatError(
                f"{path}: line {line}: key {dict(zip(spec.key, key, strict=True))} repeats the row on line {seen[key]}"
            )
        seen[key] = line
        rows.append(row)
    return rows


# --- typing ------------------------------------------------------------------------------------------------


def _to_integer(value: str) -> int:
    text = value.strip()
    if not _INTEGER.fullmatch(text):
        raise ValueError("not an integer")
    number = int(text)
    if not _INT4_MIN <= number <= _INT4_MAX:
        raise ValueError("outside the Postgres integer range")
    return number


def _to_timestamp(value: str) -> datetime:
    match = _TIMESTAMP.fullmatch(value.strip())
    if not match:
        raise ValueError("not a YYYY-MM-DD[ HH:MM[:SS[.fraction]]] timestamp")
    year, month, day, hour, minute, second, fraction = match.groups()
    # Postgres keeps microseconds; the nanosecond digits beyond that are zero in every export seen so far.
    microsecond = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                    microsecond)


def _to_boolean(value: str) -> bool:
    try:
        return _BOOLEANS[value.strip().lower()]
    except KeyError:
        raise ValueError("not True/False") from None


def _convert_value(value: Any, column_type: str) -> Any:
    """Convert one CSV string to the Python value for `column_type`; typed values pass through."""
    if value is None:
        return None
    if column_type == "text":
        if isinstance(value, str):
            return value
    elif column_type == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            return _to_integer(value)
    elif column_type == "timestamp":
        if isinstance(value, datetime):
            return value
        if isinstance(value, str):
            return _to_timestamp(value)
    elif column_type == "date":
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            return _to_timestamp(value).date()
    elif column_type == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return _to_boolean(value)
    raise ValueError(f"unexpected {type(value).__name__}")


def convert_row(spec: TableSpec, raw: dict) -> dict:
    """Type one raw row (str/None values keyed by lower-cased column) according to its table spec."""
    names = spec.column_names
    known = set(names)
    unknown = [name for name in raw if name not in known]
    missing = [name for name in names if name not in raw]
    if unknown or missing:
        raise McdFormatError(
            f"{spec.table}: columns differ from the spec (unexpected: {unknown or 'none'}; "
            f"missing: {missing or 'none'})"
        )
    row: dict[str, Any] = {}
    for name, column_type in spec.columns:
        value = raw[name]
        try:
            row[name] = _convert_value(value, column_type)
        except ValueError as exc:
            shown = value if not isinstance(value, str) or len(value) <= 80 else value[:77] + "..."
            raise McdFormatError(f"{spec.table}.{name}: cannot read {shown!r} as {column_type} ({exc})") from exc
    empty_key = [name for name in spec.key if row[name] is None]
    if empty_key:
        raise McdFormatError(f"{spec.table}: key column(s) {', '.join(empty_key)} empty")
    return row


# --- NCD documents -----------------------------------------------------------------------------------------

NCD_DOCUMENTS_TABLE = "ncd"
NCD_KEY: tuple[str, ...] = ("ncd_id", "version")
NCD_COLUMNS: list[tuple[str, str]] = [
    ("ncd_id", "integer"),
    ("version", "integer"),
    ("section", "text"),
    ("title", "text"),
    ("is_coverage_provision", "boolean"),
    ("coverage_level_code", "integer"),
    ("coverage_level", "text"),
    ("is_lab", "boolean"),
    ("under_review", "boolean"),
    ("effective_date", "date"),
    ("implementation_date", "date"),
    ("termination_date", "date"),
    ("description", "text"),
    ("indications_limitations", "text"),
    ("cross_reference", "text"),
    ("other", "text"),
    ("revision_history", "text"),
    ("keywords", "text"),
    ("transmittal_number", "integer"),
    ("transmittal_issued_date", "date"),
    ("transmittal_url", "text"),
    ("change_request_number", "integer"),
    ("publication_code", "integer"),
    ("created_at", "timestamp"),
    ("last_changed_at", "timestamp"),
    ("is_current", "boolean"),
]

# cvrg_lvl_cd as the NCD data dictionary defines it; the export also uses an undocumented 4 (two retired or
# "no national policy" NCDs), which keeps its code and gets no label rather than a guessed one.
_COVERAGE_LEVELS = {1: "full coverage", 2: "restricted coverage", 3: "no coverage"}


def _narrative(html: str | None) -> str | None:
    text = html_to_text(html or "")
    return text or None


def _as_date(value: datetime | None) -> date | None:
    return value.date() if value is not None else None


def ncd_documents(rows: list[dict]) -> list[dict]:
    """One dict per NCD version (NCD_COLUMNS keys) from ncd_trkg rows, narratives as plain text."""
    spec = MCD_TABLES["mcd_ncd_trkg"]
    typed = [convert_row(spec, row) for row in rows]
    latest: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    for row in typed:
        key = (row["ncd_id"], row["ncd_vrsn_num"])
        if key in seen:
            raise McdFormatError(f"{spec.member}: NCD {key[0]} version {key[1]} appears twice")
        seen.add(key)
        latest[key[0]] = max(latest.get(key[0], key[1]), key[1])
    documents = []
    for row in typed:
        changed = [stamp for stamp in (row["last_updt_tmstmp"], row["last_clrnc_tmstmp"]) if stamp]
        documents.append(
            {
                "ncd_id": row["ncd_id"],
                "version": row["ncd_vrsn_num"],
                "section": row["ncd_mnl_sect"].strip() if row["ncd_mnl_sect"] else None,
                "title": row["ncd_mnl_sect_title"].strip() if row["ncd_mnl_sect_title"] else None,
                "is_coverage_provision": (
                    not row["natl_cvrg_type"] if row["natl_cvrg_type"] is not None else None
                ),
                "coverage_level_code": row["cvrg_lvl_cd"],
                "coverage_level": _COVERAGE_LEVELS.get(row["cvrg_lvl_cd"]),
                "is_lab": row["ncd_lab"],
                "under_review": row["under_rvw"],
                "effective_date": _as_date(row["ncd_efctv_dt"]),
                "implementation_date": _as_date(row["ncd_impltn_dt"]),
                "termination_date": _as_date(row["ncd_trmntn_dt"]),
                "description": _narrative(row["itm_srvc_desc"]),
                "indications_limitations": _narrative(row["indctn_lmtn"]),
                "cross_reference": _narrative(row["xref_txt"]),
                "other": _narrative(row["othr_txt"]),
                "revision_history": _narrative(row["rev_hstry"]),
                "keywords": row["ncd_keyword"],
                "transmittal_number": row["trnsmtl_num"],
                "transmittal_issued_date": _as_date(row["trnsmtl_issnc_dt"]),
                "transmittal_url": row["trnsmtl_url"],
                "change_request_number": row["chg_rqst_num"],
                "publication_code": row["pblctn_cd"],
                "created_at": row["creatd_tmstmp"],
                # The dictionary: the later of last-updated and last-cleared is the latest change.
                "last_changed_at": max(changed) if changed else None,
                "is_current": row["ncd_vrsn_num"] == latest[row["ncd_id"]],
            }
        )
    return documents


# --- source: discover + load, called by the refresh pipeline ----------------------------------------------

# Inner zips of the bulk export, by part; real exports name them like current_lcd.zip / ncd.zip.
PART_ZIPS: dict[str, tuple[str, ...]] = {
    "ncd": ("ncd",),
    "lcd": ("current_lcd", "all_lcd", "lcd"),
    "article": ("current_article", "all_article", "article"),
}


def _part_of(folder: str) -> str | None:
    for part, names in PART_ZIPS.items():
        if folder in names:
            return part
    return None


def _find_csvs(root: Path) -> dict[str, dict[str, Path]]:
    """{part: {member name: path}} for every CSV under the extracted export, by the inner zip it came from."""
    found: dict[str, dict[str, Path]] = {}
    for path in sorted(root.rglob("*.csv")):
        part = next((p for p in (_part_of(parent.name) for parent in path.relative_to(root).parents) if p), None)
        if part is not None:
            found.setdefault(part, {})[path.name.lower()] = path
    return found


class McdSource:
    """Medicare Coverage Database bulk export (all_data.zip) -> mcd_* tables + ncd (clean narratives)."""

    name = "mcd"
    tables = (*sorted(MCD_TABLES), NCD_DOCUMENTS_TABLE)

    def discover(self, page_url: str, get_page: GetPage) -> list[ReleaseCandidate]:
        """The all_data.zip link of the downloads page (labelled later from its Last-Modified date)."""
        for url, text in page_links(get_page(page_url), page_url):
            if PurePosixPath(urlsplit(url).path).name.lower() == "all_data.zip":
                return [ReleaseCandidate(None, [RemoteFile(url, text)])]
        raise McdFormatError(f"{page_url}: no all_data.zip link on the MCD downloads page")

    def load(self, conn: Connection, release_id: int, files: list[Path], workdir: Path) -> LoadReport:
        """Extract the nested zips safely, COPY every known CSV into its table, report what is missing."""
        (zip_path,) = files
        extract_nested(zip_path, workdir)
        csvs = _find_csvs(workdir)
        report = LoadReport()
        constants = {"release_id": release_id}
        loaded_tables: set[str] = set()
        for part in PARTS:
            members = csvs.get(part)
            if members is None:
                report.missing.append(f"{PART_ZIPS[part][0]}.zip")
                continue
            report.missing += find_missing_members(part, list(members))
            unknown = find_unknown_members(part, list(members))
            if unknown:
                report.notes.setdefault("unknown_members", []).extend(unknown)
            for member, path in members.items():
                if member not in _SPECS_BY_MEMBER:
                    continue
                spec = _SPECS_BY_MEMBER[member]
                if spec.table in loaded_tables:  # a lookup both the LCD and Article exports carry
                    continue
                rows = read_table(path, spec)
                report.rows[spec.table] = copy_rows(conn, spec.table, spec.columns, rows, constants=constants)
                loaded_tables.add(spec.table)
                if spec.table == "mcd_ncd_trkg":
                    documents = ncd_documents(rows)
                    report.rows[NCD_DOCUMENTS_TABLE] = copy_rows(
                        conn, NCD_DOCUMENTS_TABLE, NCD_COLUMNS, documents, constants=constants
                    )
        return report


SOURCE = McdSource()
