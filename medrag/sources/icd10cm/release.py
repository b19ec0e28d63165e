"""ICD-10-CM releases (CDC tabular XML, fixed-width order file): zip discovery and parsing into plain rows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from xml.etree.ElementTree import Element

from sqlalchemy import Connection

from medrag.core.identifiers import dotted_icd10cm
from medrag.ingest.archive import safe_extract
from medrag.ingest.copy import copy_rows
from medrag.ingest.links import page_links
from medrag.ingest.releases import LoadReport
from medrag.sources.common import GetPage, ReleaseCandidate, RemoteFile, write_code_lookups
from medrag.sources.icd10cm.index import (
    COLUMN_ALIAS_COLUMNS,
    INDEX_ENTRY_COLUMNS,
    column_alias_rows,
    index_member_kind,
    index_rows,
    parse_index_files,
)
from medrag.sources.icd10cm.word_forms import WORD_FORM_COLUMNS, word_form_rows
from medrag.sources.icd10cm.xmlfile import Icd10cmFormatError, parse_xml_safely
from medrag.sources.icd10cm.xmlfile import clean_text as _clean

# Instructional-note elements shared by chapters, sections and diags, mapped to their column names.
NOTE_COLUMNS: dict[str, str] = {
    "inclusionTerm": "inclusion_terms",
    "includes": "includes",
    "excludes1": "excludes1",
    "excludes2": "excludes2",
    "codeFirst": "code_first",
    "useAdditionalCode": "use_additional_code",
    "codeAlso": "code_also",
    "notes": "notes",
}
_NOTE_COLUMN_TYPES: list[tuple[str, str]] = [(column, "text[]") for column in NOTE_COLUMNS.values()]

ICD10CM_CHAPTER_COLUMNS: list[tuple[str, str]] = [
    ("chapter", "integer"),
    ("description", "text"),
    ("first_code", "text"),
    ("last_code", "text"),
    *_NOTE_COLUMN_TYPES,
]

ICD10CM_SECTION_COLUMNS: list[tuple[str, str]] = [
    ("section_id", "text"),
    ("description", "text"),
    ("chapter", "integer"),
    ("first_code", "text"),
    ("last_code", "text"),
    ("has_codes", "boolean"),
    *_NOTE_COLUMN_TYPES,
]

ICD10CM_CODE_COLUMNS: list[tuple[str, str]] = [
    ("code", "text"),
    ("description", "text"),
    ("parent_code", "text"),
    ("chapter", "integer"),
    ("section_id", "text"),
    ("depth", "integer"),
    ("tabular_order", "integer"),
    ("billable", "boolean"),
    ("requires_seventh_character", "boolean"),
    ("is_placeholder", "boolean"),
    *_NOTE_COLUMN_TYPES,
    ("seven_chr_note", "text"),
    ("seven_chr_def", "jsonb"),
    ("seven_chr_def_notes", "text[]"),
    ("seven_chr_def_from", "text"),
    ("seventh_character", "text"),
]

ICD10CM_ORDER_COLUMNS: list[tuple[str, str]] = [
    ("order_number", "integer"),
    ("code", "text"),
    ("billable", "boolean"),
    ("short_description", "text"),
    ("long_description", "text"),
]

ICD10CM_ADDENDA_COLUMNS: list[tuple[str, str]] = [
    ("line", "integer"),
    ("action", "text"),
    ("code", "text"),
    ("billable", "boolean"),
    ("short_description", "text"),
    ("long_description", "text"),
]
_ADDENDA_ACTIONS = {"add:": "add", "delete:": "delete", "revise from:": "revise_from", "revise to:": "revise_to"}
_ORDER_ADDENDA = re.compile(r"order.*addenda.*\.txt$")

TABULAR_ROOT_TAG = "ICD10CM.tabular"
# A full ICD-10-CM code has 7 characters (dot not counted); shorter codes under a sevenChrDef need one added.
FULL_CODE_LENGTH = 7
# Elements we know about and deliberately leave out of the rows (H54's visual impairment grid is a table,
# not a note); they are counted in TabularRelease.skipped_elements rather than silently vanishing.
_STRUCTURAL_TAGS = {"name", "desc", "diag", "sevenChrNote", "sevenChrDef", "section", "sectionIndex"}

# The one kind of exception the Tabular states in prose (S06): "7th characters D and S do not apply to codes in
# category S06 with 6th character 7 - death due to ..., or 8 - death due to ...".
_SEVENTH_EXCEPTION = re.compile(r"7th characters? ((?:[A-Z0-9](?:, | and | or )?)+) do(?:es)? not apply to codes "
                                r"in category \S+ with 6th characters? (.*)")
_SIXTH_CHARACTER = re.compile(r"(?:^|, or |, | or )([A-Z0-9]) - ")
_ORDER_CODE = re.compile(r"[A-Z][0-9A-Z]{2,6}")
_EXPLICIT_FY = re.compile(r"(?i)(?<![a-z0-9])fy[\s_-]?((?:19|20)\d{2})(?!\d)")
_BARE_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")


@dataclass
class TabularRelease:
    """One parsed tabular XML: version text, fiscal-year label and the chapter, section and code rows."""

    source_file: str
    version: str | None
    fiscal_year: str | None
    chapters: list[dict] = field(default_factory=list)
    sections: list[dict] = field(default_factory=list)
    codes: list[dict] = field(default_factory=list)
    skipped_elements: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- discovery


def fiscal_year_label(text: str) -> str | None:
    """Return "FY2026" for names like "icd10cm_tabular_2026.xml" or "2026-code-tables.zip", else None."""
    explicit = {match.group(1) for match in _EXPLICIT_FY.finditer(text)}
    years = explicit or {match.group(1) for match in _BARE_YEAR.finditer(text)}
    # Two different years in one name (e.g. "2025-2026") cannot be resolved safely, so refuse to guess.
    if len(years) != 1:
        return None
    return f"FY{years.pop()}"


def _candidate_members(zip_names: Iterable[str], stem_word: str, suffix: str) -> list[str]:
    """Zip members whose file name contains stem_word and ends with suffix, minus macOS debris and addenda."""
    found = []
    for name in zip_names:
        if name.endswith("/") or name.startswith("__MACOSX/"):
            continue
        base = PurePosixPath(name).name.lower()
        # Addenda files list changes only; "._x" files are macOS resource forks.
        if base.startswith("._") or "addenda" in base:
            continue
        if stem_word in base and base.endswith(suffix):
            found.append(name)
    return found


def find_tabular_member(zip_names: Iterable[str], archive_name: str = "zip archive", *,
                        required: bool = True) -> str | None:
    """Return the single `*tabular*.xml` member of a CDC code-tables zip (None when absent and not required),
    or raise Icd10cmFormatError."""
    names = list(zip_names)
    found = _candidate_members(names, "tabular", ".xml")
    if not found:
        if not required:
            return None
        raise Icd10cmFormatError(f"{archive_name}: no *tabular*.xml member among {sorted(names)}")
    if len(found) > 1:
        raise Icd10cmFormatError(f"{archive_name}: several tabular XML members, ambiguous: {sorted(found)}")
    return found[0]


def find_order_addenda_member(zip_names: Iterable[str]) -> str | None:
    """Return the `*order_addenda*.txt` member of a CDC zip (the year's changes, with header flags), None if absent."""
    found = sorted(name for name in zip_names if not name.startswith("__MACOSX/")
                   and _ORDER_ADDENDA.search(PurePosixPath(name).name.lower())
                   and not PurePosixPath(name).name.startswith("._"))
    return found[0] if found else None


def find_order_member(zip_names: Iterable[str], archive_name: str = "zip archive") -> str | None:
    """Return the `*order*.txt` member of a CDC zip, None when the zip has none."""
    found = _candidate_members(zip_names, "order", ".txt")
    if len(found) > 1:
        raise Icd10cmFormatError(f"{archive_name}: several order-file members, ambiguous: {sorted(found)}")
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------- tabular


def _element_text(element: Element) -> str | None:
    """All text inside an element, inline markup included, whitespace-normalised."""
    return _clean("".join(element.itertext()))


def _note_texts(container: Element) -> list[str]:
    """The non-empty `<note>` texts of one note container, in document order."""
    texts = (_element_text(note) for note in container.findall("note"))
    return [text for text in texts if text is not None]


def _note_columns(element: Element, skipped: Counter[str]) -> dict[str, list[str] | None]:
    """Gather the instructional notes directly under element into their columns (None when absent)."""
    columns: dict[str, list[str] | None] = dict.fromkeys(NOTE_COLUMNS.values())
    for child in element:
        column = NOTE_COLUMNS.get(child.tag)
        if column is None:
            if child.tag not in _STRUCTURAL_TAGS:
                skipped[child.tag] += 1
            continue
        texts = _note_texts(child)
        if texts:
            # A tag may repeat on one element; keep every note rather than only the last block.
            columns[column] = (columns[column] or []) + texts
    return columns


def _required_text(element: Element, tag: str, path: Path, where: str) -> str:
    """The cleaned text of a mandatory child element, or Icd10cmFormatError naming the file and place."""
    child = element.find(tag)
    text = _element_text(child) if child is not None else None
    if text is None:
        raise Icd10cmFormatError(f"{path}: {where} has no <{tag}> text")
    return text


def _seven_chr_definition(
    diag: Element, code: str, path: Path
) -> tuple[dict[str, str] | None, list[str] | None]:
    """The diag's own `<sevenChrDef>` as {character: meaning} plus any notes inside it."""
    definition_element = diag.find("sevenChrDef")
    if definition_element is None:
        return None, None
    definition: dict[str, str] = {}
    for extension in definition_element.findall("extension"):
        character = extension.get("char")
        meaning = _element_text(extension)
        if not character or len(character) != 1 or meaning is None:
            raise Icd10cmFormatError(f"{path}: <sevenChrDef> of {code} has an extension without char or text")
        definition[character] = meaning
    if not definition:
        raise Icd10cmFormatError(f"{path}: <sevenChrDef> of {code} defines no 7th characters")
    return definition, _note_texts(definition_element) or None


def _chapter_number(chapter: Element, path: Path) -> int:
    """The chapter's `<name>` as an integer."""
    name = _required_text(chapter, "name", path, "a <chapter>")
    if not name.isdigit():
        raise Icd10cmFormatError(f"{path}: chapter name {name!r} is not a chapter number")
    return int(name)


def _section_bounds(section_id: str, section_refs: dict[str, Element]) -> tuple[str, str]:
    """First and last category of a section, from its `<sectionRef>` or else from the id "A00-A09"."""
    reference = section_refs.get(section_id)
    if reference is not None and reference.get("first") and reference.get("last"):
        return reference.get("first"), reference.get("last")
    # Grouping sections such as "C00-C96" have no sectionRef; their id is the range.
    first, _, last = section_id.partition("-")
    return first, last or first


class _CodeCollector:
    """Walks the nested `<diag>` tree of one section and builds code rows in document order."""

    def __init__(self, path: Path, codes: list[dict], skipped: Counter[str]) -> None:
        self.path = path
        self.codes = codes
        self.skipped = skipped
        self.seen: set[str] = set()
        self.definitions: dict[str, dict[str, str]] = {}
        self.exceptions: dict[str, dict[str, set[str]]] = {}

    def collect(self, section: Element, chapter: int, section_id: str) -> None:
        """Add rows for every diag in the section, depth first."""
        for diag in section.findall("diag"):
            self._add(diag, chapter, section_id, parent_code=None, depth=1, seven_chr_from=None)

    def _add(
        self, diag: Element, chapter: int, section_id: str, parent_code: str | None, depth: int,
        seven_chr_from: str | None,
    ) -> None:
        where = f"a <diag> under {parent_code or section_id}"
        code = _required_text(diag, "name", self.path, where)
        if code in self.seen:
            raise Icd10cmFormatError(f"{self.path}: code {code} appears in more than one <diag>")
        self.seen.add(code)
        description = _required_text(diag, "desc", self.path, f"<diag> {code}")
        seven_chr_def, seven_chr_def_notes = _seven_chr_definition(diag, code, self.path)
        # The nearest sevenChrDef (own or an ancestor's) is the one that applies to this code.
        if seven_chr_def is not None:
            seven_chr_from = code
        children = diag.findall("diag")
        requires_seventh = seven_chr_from is not None and len(code.replace(".", "")) < FULL_CODE_LENGTH
        seven_chr_note_element = diag.find("sevenChrNote")
        seven_chr_note = None
        if seven_chr_note_element is not None:
            seven_chr_note = _clean(" ".join(_note_texts(seven_chr_note_element)))
        row = {
            "code": code,
            "description": description,
            "parent_code": parent_code,
            "chapter": chapter,
            "section_id": section_id,
            "depth": depth,
            "tabular_order": len(self.codes) + 1,
            "billable": not children and not requires_seventh,
            "requires_seventh_character": requires_seventh,
            "is_placeholder": diag.get("placeholder", "").lower() == "true",
            **_note_columns(diag, self.skipped),
            "seven_chr_note": seven_chr_note,
            "seven_chr_def": seven_chr_def,
            "seven_chr_def_notes": seven_chr_def_notes,
            "seven_chr_def_from": seven_chr_from,
            "seventh_character": None,
        }
        self.codes.append(row)
        if seven_chr_def is not None:
            self.definitions[code] = seven_chr_def
            self.exceptions[code] = seventh_character_exceptions(row["notes"] or [])
        if requires_seventh and not children:
            self.codes.extend(self._extensions(row, self.definitions[seven_chr_from], self.exceptions[seven_chr_from]))
        for child in children:
            self._add(child, chapter, section_id, code, depth + 1, seven_chr_from)

    def _extensions(self, row: dict, definition: dict[str, str], exceptions: dict[str, set[str]]) -> list[dict]:
        """The billable codes the Tabular implies but does not list: the code, X placeholders, each 7th character."""
        padded = row["code"].replace(".", "").ljust(FULL_CODE_LENGTH - 1, "X")
        excluded = exceptions.get(padded[-1], set())
        allowed = [(character, meaning) for character, meaning in definition.items() if character not in excluded]
        return [{
            **row,
            **dict.fromkeys(NOTE_COLUMNS.values()),
            "code": dotted_icd10cm(padded + character),
            "description": f"{row['description']}, {meaning}",
            "parent_code": row["code"],
            "depth": row["depth"] + 1,
            "tabular_order": len(self.codes) + 1 + offset,
            "billable": True,
            "requires_seventh_character": False,
            "is_placeholder": row["is_placeholder"] or "X" in padded[3:],
            "seven_chr_note": None, "seven_chr_def": None, "seven_chr_def_notes": None,
            "seventh_character": character,
        } for offset, (character, meaning) in enumerate(allowed)]


def seventh_character_exceptions(notes: Iterable[str]) -> dict[str, set[str]]:
    """{6th character: 7th characters that do not apply} from a category's notes (S06's "do not apply" note)."""
    exceptions: dict[str, set[str]] = {}
    for note in notes:
        if match := _SEVENTH_EXCEPTION.search(note):
            characters = set(re.findall(r"\b[A-Z0-9]\b", match.group(1)))
            for sixth in _SIXTH_CHARACTER.findall(match.group(2)):
                exceptions.setdefault(sixth, set()).update(characters)
    return exceptions


def parse_tabular(path: Path) -> TabularRelease:
    """Parse a CDC ICD-10-CM tabular XML into chapter, section and code rows."""
    path = Path(path)
    root = parse_xml_safely(path, "tabular XML")
    if root.tag != TABULAR_ROOT_TAG:
        raise Icd10cmFormatError(f"{path}: root element is <{root.tag}>, expected <{TABULAR_ROOT_TAG}>")
    version = _clean(root.findtext("version"))
    release = TabularRelease(
        source_file=path.name,
        version=version,
        fiscal_year=fiscal_year_label(version or "") or fiscal_year_label(path.name),
    )
    skipped: Counter[str] = Counter()
    collector = _CodeCollector(path, release.codes, skipped)
    for chapter_element in root.findall("chapter"):
        chapter = _chapter_number(chapter_element, path)
        section_refs = {ref.get("id"): ref for ref in chapter_element.iter("sectionRef") if ref.get("id")}
        section_rows = []
        for section in chapter_element.findall("section"):
            section_id = section.get("id")
            if not section_id:
                raise Icd10cmFormatError(f"{path}: a <section> in chapter {chapter} has no id attribute")
            first_code, last_code = _section_bounds(section_id, section_refs)
            section_rows.append({
                "section_id": section_id,
                "description": _required_text(section, "desc", path, f"section {section_id}"),
                "chapter": chapter,
                "first_code": first_code,
                "last_code": last_code,
                "has_codes": section.find("diag") is not None,
                **_note_columns(section, skipped),
            })
            collector.collect(section, chapter, section_id)
        if not section_rows:
            raise Icd10cmFormatError(f"{path}: chapter {chapter} has no <section>")
        release.sections.extend(section_rows)
        release.chapters.append({
            "chapter": chapter,
            "description": _required_text(chapter_element, "desc", path, f"chapter {chapter}"),
            # Grouping sections (e.g. "C00-C96") are wider than the indexed ones, so take the extremes.
            "first_code": min(row["first_code"] for row in section_rows),
            "last_code": max(row["last_code"] for row in section_rows),
            **_note_columns(chapter_element, skipped),
        })
    if not release.codes:
        raise Icd10cmFormatError(f"{path}: no <chapter>/<section>/<diag> codes found")
    release.skipped_elements = dict(skipped)
    return release


# ---------------------------------------------------------------------------------------------- order file


def _order_rows(path: Path, lines: Iterable[str]) -> Iterator[dict]:
    """Decode fixed-width order-file lines: order 0-4, code 6-12, flag 14, short 16-75, long 77-."""
    for line_number, raw_line in enumerate(lines, start=1):
        line = raw_line.rstrip("\r\n")
        if not line.strip():
            continue
        order_text, code = line[0:5], line[6:13].strip()
        flag = line[14:15]
        separators_ok = line[5:6] == " " and line[13:14] == " " and line[15:16] == " "
        fields_ok = order_text.isdigit() and _ORDER_CODE.fullmatch(code) and flag in ("0", "1")
        if not (fields_ok and separators_ok):
            raise Icd10cmFormatError(f"{path}: line {line_number} is not an order-file record: {line[:40]!r}")
        short_description = _clean(line[16:76])
        long_description = _clean(line[77:])
        if short_description is None or long_description is None:
            raise Icd10cmFormatError(f"{path}: line {line_number} ({code}) lacks a short or long description")
        yield {
            "order_number": int(order_text),
            "code": dotted_icd10cm(code),
            "billable": flag == "1",
            "short_description": short_description,
            "long_description": long_description,
        }


def parse_order_file(path: Path) -> list[dict]:
    """Parse a CDC ICD-10-CM order file (fixed width, CRLF) into rows with dotted codes."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(_order_rows(path, handle))
    except UnicodeDecodeError as exc:
        raise Icd10cmFormatError(f"{path}: order file is not UTF-8/ASCII text ({exc})") from exc
    except OSError as exc:
        raise Icd10cmFormatError(f"{path}: cannot read order file ({exc})") from exc
    if not rows:
        raise Icd10cmFormatError(f"{path}: order file has no records")
    return rows


def _addenda_rows(path: Path, lines: Iterable[str]) -> Iterator[dict]:
    """Decode order-addenda lines: action 0-12 ("Add:", "Delete:", "Revise from:", "Revise to:"), then the order
    file's record without its order number: flag 13, code 15-21, short 23-82, long 84-. Counts at the end are
    skipped."""
    for line_number, raw_line in enumerate(lines, start=1):
        line = raw_line.rstrip("\r\n")
        action = _ADDENDA_ACTIONS.get(line[:13].strip().lower())
        if action is None:
            continue
        code, flag = line[15:22].strip(), line[13:14]
        if not (_ORDER_CODE.fullmatch(code) and flag in ("0", "1")):
            raise Icd10cmFormatError(f"{path}: line {line_number} is not an addenda record: {line[:40]!r}")
        yield {"line": line_number, "action": action, "code": dotted_icd10cm(code), "billable": flag == "1",
               "short_description": _clean(line[23:83]), "long_description": _clean(line[84:])}


def parse_order_addenda(path: Path) -> list[dict]:
    """Parse a CDC order-addenda file: each code added, deleted or revised since the year before."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return list(_addenda_rows(path, handle))
    except UnicodeDecodeError as exc:
        raise Icd10cmFormatError(f"{path}: addenda file is not UTF-8/ASCII text ({exc})") from exc
    except OSError as exc:
        raise Icd10cmFormatError(f"{path}: cannot read addenda file ({exc})") from exc


# ---------------------------------------------------------------------------------------------- source

# Link text of the code-table zips on the CMS ICD-10 page, e.g. "2026 Code Tables, Tabular and Index (ZIP)".
_CODE_TABLES_LINK = re.compile(r"code\s+tables|tabular", re.IGNORECASE)


class Icd10cmSource:
    """ICD-10-CM: a fiscal year's zips (tabular XML, order file, index files) -> the icd10cm_* tables."""

    name = "icd10cm"
    tables = ("icd10cm_chapter", "icd10cm_section", "icd10cm_code", "icd10cm_order_code", "icd10cm_index_entry",
              "icd10cm_index_column_alias", "icd10cm_word_form", "icd10cm_addenda")

    def discover(self, page_url: str, get_page: GetPage) -> list[ReleaseCandidate]:
        """One candidate per fiscal year, newest first, with every code-table zip linked for that year.

        CDC publishes a year as several zips (code descriptions with the order file; tabular and index): a
        release is all of them.
        """
        candidates: dict[str, ReleaseCandidate] = {}
        for url, text in page_links(get_page(page_url), page_url):
            if not url.lower().endswith(".zip") or not _CODE_TABLES_LINK.search(text + " " + url):
                continue
            label = fiscal_year_label(text) or fiscal_year_label(PurePosixPath(url).name)
            if not label:
                continue
            candidate = candidates.setdefault(label, ReleaseCandidate(label, []))
            if all(remote.url != url for remote in candidate.files):
                candidate.files.append(RemoteFile(url, text))
        return [candidates[label] for label in sorted(candidates, reverse=True)]

    def load(self, conn: Connection, release_id: int, files: list[Path], workdir: Path) -> LoadReport:
        """Extract the zips safely, parse the tabular XML (or, without one, the order file) and the index files.

        A year without tabular XML (CDC's "code descriptions" zip alone) still loads: its codes come from the
        order file, without notes, so releases can be compared.
        """
        members = _extract_members(files, workdir)
        names = list(members)
        where = ", ".join(path.name for path in files)
        tabular_name = find_tabular_member(names, where, required=False)
        order_name = find_order_member(names, where)
        if not tabular_name and not order_name:
            raise Icd10cmFormatError(f"{where}: no *tabular*.xml member and no order file among {sorted(names)}")
        constants = {"release_id": release_id}
        rows: dict[str, int] = {}
        notes: dict[str, object] = {"order_file": order_name}
        order_rows = parse_order_file(members[order_name]) if order_name else []
        if tabular_name:
            tabular = parse_tabular(members[tabular_name])
            notes["version"] = tabular.version
            rows["icd10cm_chapter"] = copy_rows(conn, "icd10cm_chapter", ICD10CM_CHAPTER_COLUMNS, tabular.chapters,
                                                constants=constants)
            rows["icd10cm_section"] = copy_rows(conn, "icd10cm_section", ICD10CM_SECTION_COLUMNS, tabular.sections,
                                                constants=constants)
            code_rows = tabular.codes
        else:
            notes["codes_from"] = "order file (no tabular XML in this release)"
            code_rows = codes_from_order(order_rows)
        rows["icd10cm_code"] = copy_rows(conn, "icd10cm_code", ICD10CM_CODE_COLUMNS, code_rows, constants=constants)
        if order_rows:
            rows["icd10cm_order_code"] = copy_rows(conn, "icd10cm_order_code", ICD10CM_ORDER_COLUMNS, order_rows,
                                                   constants=constants)
        addenda_name = find_order_addenda_member(names)
        if addenda_name:
            rows["icd10cm_addenda"] = copy_rows(conn, "icd10cm_addenda", ICD10CM_ADDENDA_COLUMNS,
                                                parse_order_addenda(members[addenda_name]), constants=constants)
            notes["addenda_file"] = addenda_name
        index_files = {name: path for name, path in members.items() if index_member_kind(name)}
        if index_files:
            titles = {row["code"]: row["description"] for row in code_rows if row["description"]}
            parsed = parse_index_files(index_files, titles)
            entries = [row for index in parsed for row in index_rows(index, titles)]
            rows["icd10cm_index_entry"] = copy_rows(conn, "icd10cm_index_entry", INDEX_ENTRY_COLUMNS, entries,
                                                    constants=constants)
            aliases = [row for index in parsed for row in column_alias_rows(index)]
            rows["icd10cm_index_column_alias"] = copy_rows(conn, "icd10cm_index_column_alias", COLUMN_ALIAS_COLUMNS,
                                                           aliases, constants=constants)
            rows["icd10cm_word_form"] = copy_rows(conn, "icd10cm_word_form", WORD_FORM_COLUMNS,
                                                  word_form_rows(parsed), constants=constants)
            notes["index_files"] = {index.index_name: index.source_file for index in parsed}
        write_code_lookups(conn, release_id)
        return LoadReport(rows=rows, notes=notes)


def _extract_members(files: list[Path], workdir: Path) -> dict[str, Path]:
    """Every member of every zip, extracted safely under its own folder: {member name: path}."""
    members: dict[str, Path] = {}
    for number, zip_path in enumerate(files):
        target = workdir / f"zip{number}"
        for path in safe_extract(zip_path, target):
            members.setdefault(path.relative_to(target).as_posix(), path)
    return members


def codes_from_order(order_rows: list[dict]) -> list[dict]:
    """icd10cm_code rows from an order file: code, long description, billable flag, parent by prefix, order.

    Without the Tabular's 7th-character definitions, a full-length code is taken for its parent plus a 7th
    character when its description is the parent's plus ", <meaning>" (as CDC writes every extension).
    """
    descriptions: dict[str, str] = {}
    codes = []
    for row in order_rows:
        code, description = row["code"], row["long_description"]
        bare = code.replace(".", "")
        parent = next((candidate for length in range(len(bare) - 1, 2, -1)
                       if (candidate := dotted_icd10cm(bare[:length])) in descriptions), None)
        descriptions[code] = description
        extends_parent = (len(bare) == FULL_CODE_LENGTH and parent is not None
                          and description.startswith(descriptions[parent] + ", "))
        codes.append({
            "code": code, "description": description, "parent_code": parent, "chapter": None,
            "section_id": None, "depth": len(bare) - 2, "tabular_order": row["order_number"],
            "billable": row["billable"], "requires_seventh_character": None, "is_placeholder": "X" in bare[3:],
            **dict.fromkeys(NOTE_COLUMNS.values()),
            "seven_chr_note": None, "seven_chr_def": None, "seven_chr_def_notes": None, "seven_chr_def_from": None,
            "seventh_character": bare[-1] if extends_parent else None,
        })
    return codes


SOURCE = Icd10cmSource()
