"""HCPCS Level II: find the quarterly release zip on the CMS page and parse its fixed-width record file.

The record file (e.g. ``HCPC2019_CONTR_ANWEB.txt``) follows the CMS "HCPCS Contractor Record" layout
(``HCPCS2019_recordlayout.txt``): 320-character records, ISO-8859-1, CRLF, a few free-text disclaimer
lines first. A code's long description is spread over one first line (record identification code 3 for
procedures, 7 for modifiers) plus continuation lines (4 and 8) that carry only more description text.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from sqlalchemy import Connection

from medrag.core import tuning
from medrag.core.errors import MedragError
from medrag.ingest.archive import open_zip_safely, read_member
from medrag.ingest.copy import copy_rows
from medrag.ingest.links import normalise_space, page_links
from medrag.ingest.releases import LoadReport
from medrag.sources.common import GetPage, ReleaseCandidate, RemoteFile, write_code_lookups
from medrag.sources.hcpcs.abbreviations import write_abbreviations


class HcpcsFormatError(MedragError):
    """An HCPCS record file (or release zip) does not follow the CMS contractor record layout."""


class HcpcsReleaseError(MedragError):
    """A release zip does not hold exactly one recognisable fixed-width HCPCS record file."""


# ---------------------------------------------------------------------------------------------------------
# Discovery: which zip on the CMS quarterly page is the Alpha-Numeric HCPCS File, and which release is it
# ---------------------------------------------------------------------------------------------------------

_RELEASE_LINK_TEXT = re.compile(r"alpha\s*-?\s*numeric\s+hcpcs\s+file", re.IGNORECASE)
_QUARTER_BY_MONTH = {"january": 1, "april": 2, "july": 3, "october": 4}
_MONTH_NAMES = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_YEAR = re.compile(rf"\b({_MONTH_NAMES})\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_ANY_MONTH = re.compile(rf"\b({_MONTH_NAMES})\b", re.IGNORECASE)
_LEADING_YEAR = re.compile(r"^\s*((?:19|20)\d\d)\b")


def release_label_from_text(text: str) -> str | None:
    """Release label from link text: 'January 2026 ...' -> '2026Q1', '2019 Alpha-Numeric ...' -> '2019'."""
    cleaned = normalise_space(text)
    month_year = _MONTH_YEAR.search(cleaned)
    if month_year:
        quarter = _QUARTER_BY_MONTH.get(month_year.group(1).lower())
        # CMS releases HCPCS files for the quarters starting in January/April/July/October only; another
        # month would be a guess at the quarter, so it gets no label rather than a wrong one.
        return f"{month_year.group(2)}Q{quarter}" if quarter else None
    if _ANY_MONTH.search(cleaned):
        return None
    leading_year = _LEADING_YEAR.match(cleaned)
    return leading_year.group(1) if leading_year else None


def _release_sort_key(label: str | None) -> tuple[int, int]:
    """Sort key, larger for newer releases; an annual (bare-year) release sorts just before that year's Q1."""
    if label is None:
        return (-1, -1)
    year, _, quarter = label.partition("Q")
    return (int(year), int(quarter) if quarter else 0)


def discover_hcpcs_zip_links(html: str, base_url: str) -> list[tuple[str, str]]:
    """(absolute url, link text) of every 'Alpha-Numeric HCPCS File' link on a CMS page, newest first."""
    links: list[tuple[str, str]] = []
    seen_urls: set[str] = set()
    for url, text in page_links(html, base_url):
        if not _RELEASE_LINK_TEXT.search(text):
            continue
        if url in seen_urls:
            continue
        seen_urls.add(url)
        links.append((url, text))
    # sorted() is stable: links without a month/year keep their page order, after the dated ones.
    return sorted(links, key=lambda link: _release_sort_key(release_label_from_text(link[1])), reverse=True)


def find_hcpcs_member(zip_names: list[str], *, archive: str = "HCPCS release zip") -> str:
    """Name of the fixed-width record file (``*CONTR_ANWEB*.txt``) among a release zip's member names."""
    candidates = [
        name
        for name in zip_names
        if not name.startswith("__MACOSX/")
        and PurePosixPath(name).suffix.lower() == ".txt"
        and "anweb" in PurePosixPath(name).name.lower()
    ]
    contractor_files = [name for name in candidates if "contr_anweb" in PurePosixPath(name).name.lower()]
    # Prefer the documented CONTR_ANWEB name; accept a lone *ANWEB*.txt in case CMS drops the CONTR part.
    chosen = contractor_files or candidates
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise HcpcsReleaseError(
            f"{archive}: no fixed-width HCPCS record file (*CONTR_ANWEB*.txt) among members "
            f"{sorted(zip_names)}"
        )
    raise HcpcsReleaseError(f"{archive}: several candidate HCPCS record files {sorted(chosen)}; expected one")


# ---------------------------------------------------------------------------------------------------------
# Parsing: fixed-width contractor records -> one dict per procedure or modifier code
# ---------------------------------------------------------------------------------------------------------

HCPCS_COLUMNS: list[tuple[str, str]] = [
    ("code", "text"),
    ("kind", "text"),
    ("sequence_number", "integer"),
    ("record_id_code", "text"),
    ("long_description", "text"),
    ("short_description", "text"),
    ("pricing_indicator_codes", "text[]"),
    ("multiple_pricing_indicator", "text"),
    ("cim_references", "text[]"),
    ("mcm_references", "text[]"),
    ("statute_number", "text"),
    ("lab_certification_codes", "text[]"),
    ("cross_reference_codes", "text[]"),
    ("coverage_code", "text"),
    ("asc_payment_group", "text"),
    ("asc_payment_group_effective_date", "date"),
    ("mog_payment_group", "text"),
    ("mog_payment_policy_indicator", "text"),
    ("mog_effective_date", "date"),
    ("processing_note_number", "text"),
    ("betos_code", "text"),
    ("type_of_service_codes", "text[]"),
    ("anesthesia_base_units", "integer"),
    ("code_added_date", "date"),
    ("action_effective_date", "date"),
    ("termination_date", "date"),
    ("action_code", "text"),
]

RECORD_LENGTH = 320
_FIRST_LINE_KIND = {"3": "procedure", "7": "modifier"}
_CONTINUES_KIND = {"4": "procedure", "8": "modifier"}
# Slices are 0-based, end-exclusive versions of the layout's 1-based inclusive BEG/END columns.
_CODE = slice(0, 5)
_SEQUENCE = slice(5, 10)
_RIC = 10
_LONG_DESCRIPTION = slice(11, 91)
_DETAIL = slice(91, 275)  # "positions 92-275": blank on continuation lines
_TEXT_FIELDS = {
    "short_description": slice(91, 119),
    "multiple_pricing_indicator": slice(127, 128),
    "statute_number": slice(170, 180),
    "coverage_code": slice(229, 230),
    "asc_payment_group": slice(230, 232),
    "mog_payment_group": slice(240, 243),
    "mog_payment_policy_indicator": slice(243, 244),
    "processing_note_number": slice(252, 256),
    "betos_code": slice(256, 259),
    "action_code": slice(292, 293),
}
# (field, first column 0-based, width of one occurrence, number of occurrences)
_REPEATED_FIELDS = (
    ("pricing_indicator_codes", 119, 2, 4),
    ("cim_references", 128, 6, 3),
    ("mcm_references", 146, 8, 3),
    ("lab_certification_codes", 180, 3, 8),
    ("cross_reference_codes", 204, 5, 5),
    ("type_of_service_codes", 260, 1, 5),
)
_DATE_FIELDS = {
    "asc_payment_group_effective_date": slice(232, 240),
    "mog_effective_date": slice(244, 252),
    "code_added_date": slice(268, 276),
    "action_effective_date": slice(276, 284),
    "termination_date": slice(284, 292),
}
_ANESTHESIA_BASE_UNITS = slice(265, 268)
_PROCEDURE_CODE = re.compile(r"[A-Z0-9]{5}")
_MODIFIER_CODE = re.compile(r" {3}[A-Z0-9]{2}")
_RECORD_START = re.compile(r"(?:[A-Z0-9]{5}| {3}[A-Z0-9]{2})\d{5}[3478]")


def _blank_to_none(text: str) -> str | None:
    """Field text without padding; None when the field is blank."""
    stripped = text.strip()
    return stripped or None


def _repeated(line: str, start: int, width: int, occurrences: int) -> list[str]:
    """Non-blank occurrences of an OCCURS field, in order (an empty list when none is filled)."""
    values = (line[start + i * width : start + (i + 1) * width].strip() for i in range(occurrences))
    return [value for value in values if value]


def _strip_line_ending(line: str) -> str:
    """The line without its CRLF/LF terminator (the lines may come from a file object or a split)."""
    return line.rstrip("\r\n")


class _RecordBuilder:
    """Turns the physical lines of one HCPCS file into merged per-code records, checking the layout."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.current: dict | None = None
        self.description_parts: list[str] = []
        self.seen: set[tuple[str, str]] = set()

    def fail(self, line_number: int, problem: str) -> HcpcsFormatError:
        """An error naming the file and line."""
        return HcpcsFormatError(f"{self.source} line {line_number}: {problem}")

    def finish_current(self) -> dict | None:
        """The record being built, with its description lines merged; None when there is none."""
        record = self.current
        if record is None:
            return None
        # Each 80-column piece was cut at a word boundary and padded with spaces, so the piece's padding is
        # dropped and one space rejoins the words; a piece that itself starts with a space keeps it, which
        # reproduces the double space after a sentence that CMS's own spreadsheet of the file shows.
        merged = " ".join(part.rstrip() for part in self.description_parts)
        record["long_description"] = _blank_to_none(merged)
        self.current = None
        self.description_parts = []
        return {column: record[column] for column, _ in HCPCS_COLUMNS}

    def start_record(self, line: str, line_number: int) -> None:
        """Begin a new code's record from its first line (RIC 3 or 7)."""
        ric = line[_RIC]
        kind = _FIRST_LINE_KIND[ric]
        code_field = line[_CODE]
        pattern = _PROCEDURE_CODE if kind == "procedure" else _MODIFIER_CODE
        if not pattern.fullmatch(code_field):
            expected = "5 letters/digits" if kind == "procedure" else "3 spaces then 2 letters/digits"
            raise self.fail(line_number, f"{kind} code field {code_field!r} is not {expected}")
        code = code_field.strip()
        if (kind, code) in self.seen:
            raise self.fail(line_number, f"{kind} code {code!r} appears a second time")
        self.seen.add((kind, code))
        record: dict = {
            "code": code,
            "kind": kind,
            "sequence_number": int(line[_SEQUENCE]),
            "record_id_code": ric,
        }
        for field, columns in _TEXT_FIELDS.items():
            record[field] = _blank_to_none(line[columns])
        for field, start, width, occurrences in _REPEATED_FIELDS:
            record[field] = _repeated(line, start, width, occurrences)
        for field, columns in _DATE_FIELDS.items():
            record[field] = self.parse_date(line[columns], field, line_number)
        record["anesthesia_base_units"] = self.parse_count(line[_ANESTHESIA_BASE_UNITS], line_number)
        self.current = record
        self.description_parts = [line[_LONG_DESCRIPTION]]

    def continue_record(self, line: str, line_number: int) -> None:
        """Append a continuation line (RIC 4 or 8) to the record it belongs to."""
        kind = _CONTINUES_KIND[line[_RIC]]
        code = line[_CODE].strip()
        if self.current is None or self.current["kind"] != kind or self.current["code"] != code:
            raise self.fail(
                line_number,
                f"{kind} continuation line (RIC {line[_RIC]}) for {code!r} does not follow "
                "that code's first line",
            )
        if line[_DETAIL].strip():
            raise self.fail(line_number, "continuation line has data in the detail columns 92-275")
        self.description_parts.append(line[_LONG_DESCRIPTION])

    def parse_date(self, text: str, field: str, line_number: int) -> dt.date | None:
        """A YYYYMMDD field as a date; None when blank."""
        if not text.strip():
            return None
        try:
            if not text.isdigit():
                raise ValueError("not 8 digits")
            return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
        except ValueError as exc:
            raise self.fail(line_number, f"{field} {text!r} is not a YYYYMMDD date ({exc})") from exc

    def parse_count(self, text: str, line_number: int) -> int | None:
        """The anesthesia base unit quantity as an integer; None when blank."""
        stripped = text.strip()
        if not stripped:
            return None
        if not stripped.isdigit():
            raise self.fail(line_number, f"anesthesia base units {text!r} is not a number")
        return int(stripped)


def parse_hcpcs_records(lines: Iterable[str], *, source: str = "HCPCS record file") -> Iterator[dict]:
    """One dict per procedure/modifier code (keys = HCPCS_COLUMNS), continuation lines merged in."""
    builder = _RecordBuilder(source)
    in_records = False
    for line_number, raw_line in enumerate(lines, start=1):
        line = _strip_line_ending(raw_line)
        if not in_records:
            # The free-text disclaimer lines at the top have no fixed layout; records begin at the first
            # line shaped like one.
            if not _RECORD_START.match(line):
                continue
            in_records = True
        if not line.strip():
            continue
        if len(line) > RECORD_LENGTH:
            raise builder.fail(line_number, f"record is {len(line)} characters, longer than {RECORD_LENGTH}")
        if len(line) <= _RIC:
            raise builder.fail(line_number, f"record is only {len(line)} characters: {line!r}")
        # Trailing blanks are sometimes trimmed in transit (the 2019 file has one 316-character record).
        line = line.ljust(RECORD_LENGTH)
        ric = line[_RIC]
        if not line[_SEQUENCE].isdigit():
            raise builder.fail(line_number, f"sequence number {line[_SEQUENCE]!r} is not 5 digits")
        if ric in _FIRST_LINE_KIND:
            finished = builder.finish_current()
            if finished is not None:
                yield finished
            builder.start_record(line, line_number)
        elif ric in _CONTINUES_KIND:
            builder.continue_record(line, line_number)
        else:
            raise builder.fail(line_number, f"record identification code {ric!r} is not 3, 4, 7 or 8")
    if not in_records:
        raise HcpcsFormatError(f"{source}: no HCPCS records found")
    finished = builder.finish_current()
    if finished is not None:
        yield finished


def _decode_lines(data: bytes) -> list[str]:
    """ISO-8859-1 text split on LF only: str.splitlines would also break on \\x85 and other controls."""
    return data.decode("iso-8859-1").split("\n")


def parse_hcpcs_file(path: Path) -> list[dict]:
    """All procedure and modifier records of a fixed-width HCPCS record file."""
    return list(parse_hcpcs_records(_decode_lines(Path(path).read_bytes()), source=str(path)))


# The 2019 record file is 3.7 MB; anything near this cap is not an HCPCS record file.
MAX_RECORD_FILE_BYTES = 256 * 1024 * 1024


def parse_hcpcs_zip(path: Path) -> list[dict]:
    """All records of the fixed-width record file inside an Alpha-Numeric HCPCS release zip."""
    # open_zip_safely rejects unsafe member names and size bombs; read_member checks the CRC while reading.
    with open_zip_safely(path) as archive:
        member = find_hcpcs_member(archive.namelist(), archive=str(path))
        data = read_member(archive, member, MAX_RECORD_FILE_BYTES)
    return list(parse_hcpcs_records(_decode_lines(data), source=f"{path}!{member}"))


# ---------------------------------------------------------------------------------------------------------
# Source: discover + load, called by the refresh pipeline
# ---------------------------------------------------------------------------------------------------------


class HcpcsSource:
    """HCPCS Level II: the quarterly page's Alpha-Numeric HCPCS File zip -> tables hcpcs_code and the abbreviations
    its short descriptions teach, hcpcs_abbreviation."""

    name = "hcpcs"
    tables = ("hcpcs_code", "hcpcs_abbreviation")

    def discover(self, page_url: str, get_page: GetPage) -> list[ReleaseCandidate]:
        """One candidate per Alpha-Numeric HCPCS File link, newest first, labelled from the link text."""
        links = discover_hcpcs_zip_links(get_page(page_url), page_url)
        return [ReleaseCandidate(release_label_from_text(text), [RemoteFile(url, text)]) for url, text in links]

    def load(self, conn: Connection, release_id: int, files: list[Path], workdir: Path) -> LoadReport:
        """Parse the release zip's record file, COPY every code into hcpcs_code and mine its abbreviations."""
        (zip_path,) = files
        records = parse_hcpcs_zip(zip_path)
        count = copy_rows(conn, "hcpcs_code", HCPCS_COLUMNS, records, constants={"release_id": release_id})
        abbreviations = write_abbreviations(conn, release_id, tuning.value("abbreviation_min_support"))
        write_code_lookups(conn, release_id)
        return LoadReport(rows={"hcpcs_code": count, "hcpcs_abbreviation": abbreviations})


SOURCE = HcpcsSource()
