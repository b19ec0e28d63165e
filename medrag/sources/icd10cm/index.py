"""The ICD-10-CM Index as rows: index terms with their paths, codes and resolved cross-references.

CDC ships four index files with each release (XML, root `<ICD10CM.index>`): the Index to Diseases and Injuries and
the External Cause Index (`letter/mainTerm/term[@level]`, each with a `title` that may hold `<nemod>` nonessential
modifiers, and `code`, `see`, `seeAlso`), the Table of Drugs and Chemicals and the Neoplasm Table (the same tree,
with a `cell` per column: substance x intent, site x behaviour). Every term becomes one row of
icd10cm_index_entry per code it gives: one row for a plain index term, one per filled cell for a table row.

A "see" or "see also" reference is resolved to the entry it names ("Stone" see also "Calculus" -> the main term
Calculus), and the referring words become aliases of that entry and everything under it: "stone" then finds
Calculus > ureter -> N20.1, as a coder following the reference would. A name several main terms share ("see
Fracture, humerus") is the referrer's own main term, else the one with the most entries. A "see also" within one main
term ("History, family" see also "History, personal") points at a neighbour, not another name: it is resolved but
makes no alias. A reference into the Table of Drugs
("Overdose" see "Table of Drugs and Chemicals, by drug, poisoning") or into a whole column of the Neoplasm Table
("Carcinoma" see "Neoplasm, by site, malignant") from a main term makes that term an alias of the table's matching
columns; a site-specific one ("Neoplasm, skin, benign") names one cell. An entry that gives no code and refers
elsewhere gives the code it names ("Rubeola" see "Measles": B05.9; "Tricholemmoma": the cell's D23.9), as a coder
following the reference codes.

Offline, a third party's flattening of the FY2025 Index to Diseases (`DERIVED-index-to-diseases-*.csv`, never a
production input) may stand in for the main index XML: same rows, marked by source_file.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path, PurePosixPath
from xml.etree.ElementTree import Element

from medrag.sources.icd10cm.xmlfile import Icd10cmFormatError, clean_text, parse_xml_safely

INDEX_ROOT_TAG = "ICD10CM.index"
DISEASES, EXTERNAL_CAUSES, DRUGS, NEOPLASMS = "diseases", "external_causes", "drugs", "neoplasms"
INDEX_NAMES = (DISEASES, EXTERNAL_CAUSES, DRUGS, NEOPLASMS)
# The stand-in for the Index to Diseases offline (see the module docstring).
DERIVED_INDEX_CSV = re.compile(r"derived-index-to-diseases[^/]*\.csv$", re.IGNORECASE)
DERIVED_CSV_COLUMNS = ("RowID", "Letter", "Level", "Term", "See", "SeeAlso", "NonEssModif", "Code")
# How the tables print a cell with no code: "--" in the Table of Drugs, "-" in the Neoplasm Table.
_EMPTY_CELLS = frozenset({"-", "--"})
# The Index's connecting words: a level of one alone ("with", "due to") groups the subterms it introduces and gives
# no code; one followed by words ("in renal impairment") is a subterm like any other. The code finder's Index leg
# reads the same words (medrag_index_connectives, rendered from here).
INDEX_CONNECTIVES = ("with", "without", "in", "due to", "following", "during")
_CONNECTIVE = re.compile(rf"^(?:{'|'.join(INDEX_CONNECTIVES)})$", re.IGNORECASE)
# Two words are forms of one when they begin alike this far ("Epilepsy, epileptic", "Bite, bitten by", "Vision,
# visual"): the shortest stem the Index's further names share with their first name.
_FORM_PREFIX = 3
# A term that more references point at than this is a generic target ("see also condition": 606 references in
# FY2025; the next most-referenced term has 92): its referrers are not aliases of what stands under it.
MAX_REFERRERS = 200
_DRUG_TABLE_REFERENCE = re.compile(r"^table of drugs", re.IGNORECASE)
# Which drug-table columns a reference into the table means, by the words it (or its source term) uses.
_DRUG_COLUMN_WORDS = (
    (re.compile(r"adverse effect|6th character 5", re.IGNORECASE), "adverse effect"),
    (re.compile(r"underdos|final character 6", re.IGNORECASE), "underdosing"),
    (re.compile(r"poison|overdos|wrong substance|toxic", re.IGNORECASE), "poisoning"),
)
# "Carcinoma - see Neoplasm, by site, malignant": a reference to a whole behaviour column of the Neoplasm Table
# (site-specific ones, "Neoplasm, skin, benign", name a row and are left out). First match wins: in situ before
# malignant ("Carcinoma-in-situ - see Neoplasm, in situ, by site"), secondary before it too ("Neoplasm, secondary, by
# site": the Malignant Secondary column, which only subterms refer to: "Metastasis, metastatic > spread").
_NEOPLASM_TABLE_REFERENCE = re.compile(r"^neoplasm\b.*\bby site\b", re.IGNORECASE)
# A subterm that only says the neoplasm is coded by its site ("Carcinoma > duct > specified site", "... > to
# specified site"): no word of the neoplasm's kind.
_SPECIFIED_SITE = re.compile(r"\bspecified site\b", re.IGNORECASE)
# "Metastasis, metastatic > cancer > from specified site - see Neoplasm, malignant, by site": the site a term names is
# where the cancer came from, not the cell's site, so its words alias no column (its "to specified site" sibling does).
_ORIGIN_SITE = re.compile(r"^from\b.*\bsite\b", re.IGNORECASE)
# "Tricholemmoma - see Neoplasm, skin, benign": one cell of the Neoplasm Table, the code the referring entry gives.
_NEOPLASM_CELL_REFERENCE = re.compile(r"^(?:table of )?neoplasms?, (?P<site>.+), (?P<behaviour>[^,]+)$", re.IGNORECASE)
_NEOPLASM_COLUMN_WORDS = (
    (re.compile(r"\bin situ\b", re.IGNORECASE), "ca in situ"),
    (re.compile(r"\bsecondary\b", re.IGNORECASE), "malignant secondary"),
    (re.compile(r"\bmalignant\b", re.IGNORECASE), "malignant primary"),
    (re.compile(r"\bbenign\b", re.IGNORECASE), "benign"),
    (re.compile(r"\buncertain\b", re.IGNORECASE), "uncertain"),
    (re.compile(r"\bunspecified\b", re.IGNORECASE), "unspecified"),
)

INDEX_ENTRY_COLUMNS: list[tuple[str, str]] = [
    ("index_name", "text"),
    ("entry_id", "integer"),
    ("parent_id", "integer"),
    ("level", "integer"),
    ("title", "text"),
    ("nemod", "text"),
    ("path", "text[]"),
    ("column_name", "text"),
    ("code", "text"),
    ("see", "text"),
    ("see_also", "text"),
    ("see_entry_id", "integer"),
    ("aliases", "text[]"),
    ("search_text", "text"),
    ("core_text", "text"),
    ("subterm_text", "text"),
    ("source_file", "text"),
]


@dataclass
class IndexEntry:
    """One index term: where it stands in the tree and what it gives (a code, cells, or a reference)."""

    entry_id: int
    parent_id: int | None
    level: int
    title: str
    nemod: str | None = None
    code: str | None = None
    cells: dict[str, str] = field(default_factory=dict)  # column heading -> code (tables)
    see: str | None = None
    see_also: str | None = None
    see_entry_id: int | None = None
    aliases: list[str] = field(default_factory=list)
    path: tuple[str, ...] = ()
    # the entry this one is another name for (a "see", or a "see also" to another main term): its code is this one's
    # when this one gives none
    names: IndexEntry | None = field(default=None, repr=False, compare=False)


@dataclass
class ParsedIndex:
    """One index file: which index it is, its column headings (tables) and its entries in document order."""

    index_name: str
    source_file: str
    version: str | None
    columns: tuple[str, ...] = ()
    entries: list[IndexEntry] = field(default_factory=list)
    # each alias of a column as the levels it was read from, and whether a subterm's reference gave it: (("Cancer",),
    # False), (("Metastasis, metastatic", "spread"), True)
    column_alias_levels: dict[str, list[tuple[tuple[str, ...], bool]]] = field(default_factory=dict)

    @property
    def column_aliases(self) -> dict[str, list[str]]:
        """The aliases main terms' references give each column ("Carcinoma"), as text."""
        return self._alias_texts(subterm=False)

    @property
    def column_subterm_aliases(self) -> dict[str, list[str]]:
        """The aliases subterms' references give each column ("Argentaffinoma malignant"), as text."""
        return self._alias_texts(subterm=True)

    def _alias_texts(self, subterm: bool) -> dict[str, list[str]]:
        texts = {column: [" ".join(levels) for levels, from_subterm in aliases if from_subterm == subterm]
                 for column, aliases in self.column_alias_levels.items()}
        return {column: aliases for column, aliases in texts.items() if aliases}


def index_member_kind(name: str) -> str | None:
    """Which index a release-zip member holds, from its file name (None: not an index file)."""
    base = PurePosixPath(name).name.lower()
    if DERIVED_INDEX_CSV.search(base):
        return DISEASES
    if not base.endswith(".xml") or "tabular" in base:
        return None
    if "drug" in base:
        return DRUGS
    if "neoplasm" in base:
        return NEOPLASMS
    if "eindex" in base:
        return EXTERNAL_CAUSES
    if "index" in base:
        return DISEASES
    return None


def _title_parts(title: Element) -> tuple[str, str | None]:
    """A title's own words and its nonessential modifiers ("Abasia" + "(-astasia) (hysterical)")."""
    nemods = [clean_text("".join(nemod.itertext())) for nemod in title.findall("nemod")]
    own = (title.text or "") + "".join(nemod.tail or "" for nemod in title.findall("nemod"))
    return clean_text(own) or "", " ".join(text for text in nemods if text) or None


def parse_index_xml(path: Path, expected: str | None = None) -> ParsedIndex:
    """Parse one CDC index XML (index, external cause index, drug or neoplasm table) into entries."""
    path = Path(path)
    root = parse_xml_safely(path, "index XML")
    if root.tag != INDEX_ROOT_TAG:
        raise Icd10cmFormatError(f"{path}: root element is <{root.tag}>, expected <{INDEX_ROOT_TAG}>")
    headings = {head.get("col"): clean_text(head.text) or "" for head in root.iter("head")}
    first_heading = headings.get("1", "").lower()
    kind = expected or index_member_kind(path.name)
    if first_heading.startswith("substance"):
        kind = DRUGS
    elif first_heading.startswith("neoplasm"):
        kind = NEOPLASMS
    elif "external cause" in (clean_text(root.findtext("title")) or "").lower():
        kind = EXTERNAL_CAUSES
    if kind is None:
        raise Icd10cmFormatError(f"{path}: cannot tell which ICD-10-CM index this is")
    parsed = ParsedIndex(kind, path.name, clean_text(root.findtext("version")),
                         tuple(headings[col] for col in sorted(headings, key=int) if col != "1"))
    for letter in root.findall("letter"):
        for main_term in letter.findall("mainTerm"):
            _add_term(parsed, main_term, None, 0, headings, path)
    if not parsed.entries:
        raise Icd10cmFormatError(f"{path}: no <letter>/<mainTerm> entries found")
    return parsed


def _add_term(parsed: ParsedIndex, element: Element, parent_id: int | None, level: int,
              headings: dict[str | None, str], path: Path) -> None:
    title_element = element.find("title")
    if title_element is None:
        raise Icd10cmFormatError(f"{path}: an index term at level {level} has no <title>")
    title, nemod = _title_parts(title_element)
    if not title:
        title, nemod = nemod or "", None
    entry = IndexEntry(len(parsed.entries) + 1, parent_id, level, title, nemod,
                       code=clean_text(element.findtext("code")) or clean_text(element.findtext("subcat")),
                       see=clean_text(element.findtext("see")) or clean_text(element.findtext("seecat")),
                       see_also=clean_text(element.findtext("seeAlso")))
    for cell in element.findall("cell"):
        value = clean_text(cell.text)
        if value and value not in _EMPTY_CELLS and cell.get("col") in headings:
            entry.cells[headings[cell.get("col")]] = value
    parsed.entries.append(entry)
    for child in element.findall("term"):
        child_level = int(child.get("level") or level + 1)
        _add_term(parsed, child, entry.entry_id, child_level, headings, path)


def parse_derived_index_csv(path: Path) -> ParsedIndex:
    """Parse the derived flattening of the Index to Diseases (a stand-in offline, see the module docstring)."""
    path = Path(path)
    parsed = ParsedIndex(DISEASES, path.name, None)
    parents: list[int] = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != DERIVED_CSV_COLUMNS:
                raise Icd10cmFormatError(f"{path}: columns {reader.fieldnames} are not {list(DERIVED_CSV_COLUMNS)}")
            for number, row in enumerate(reader, start=2):
                level = int(row["Level"]) if (row["Level"] or "").isdigit() else -1
                # A title that is all nonessential modifier ("(somatoform)") keeps it as its words.
                title, nemod = clean_text(row["Term"]), clean_text(row["NonEssModif"])
                if level < 0 or level > len(parents) or not (title or nemod):
                    raise Icd10cmFormatError(f"{path}: line {number} has no term or a level that skips a step")
                del parents[level:]
                entry = IndexEntry(len(parsed.entries) + 1, parents[-1] if parents else None, level,
                                   title or nemod or "", nemod if title else None,
                                   code=clean_text(row["Code"]), see=clean_text(row["See"]),
                                   see_also=clean_text(row["SeeAlso"]))
                parsed.entries.append(entry)
                parents.append(entry.entry_id)
    except UnicodeDecodeError as exc:
        raise Icd10cmFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except csv.Error as exc:
        raise Icd10cmFormatError(f"{path}: not a readable CSV ({exc})") from exc
    if not parsed.entries:
        raise Icd10cmFormatError(f"{path}: no index rows")
    return parsed


def restore_connective_objects(parsed: ParsedIndex, titles: Mapping[str, str]) -> list[IndexEntry]:
    """Give back the words the derived CSV lost after a connective, from the Tabular title of the entry's code.

    The stand-in writes "Gout, gouty > in (due to) renal impairment -> M10.30" as the title "in" with the modifier
    "(due to)": the subterm reads as a bare connective, and "Gout, gouty > in > knee" as gout of the knee. A bare
    connective never gives a code in CDC's Index; when one does here (and its modifiers are connectives too), the
    words after one of them in the code's title, to the next comma, are what it lost ("Gout due to renal impairment,
    unspecified site": "in renal impairment"). An entry whose code's title names no such words stays as it is.
    Returns the entries restored.
    """
    restored = []
    for entry in parsed.entries:
        said = [part.strip() for part in re.findall(r"\(([^)]*)\)", entry.nemod or "")]
        if not (entry.code and _CONNECTIVE.match(entry.title) and all(_CONNECTIVE.match(part) for part in said)):
            continue
        title = titles.get(entry.code.rstrip(".-"), "")
        found = next((match for connective in (entry.title, *said)
                      if (match := re.search(rf"\b{re.escape(connective)}\s+([^,]+)", title, re.IGNORECASE))), None)
        if found:
            entry.title = f"{entry.title} {found.group(1).strip()}"
            restored.append(entry)
    return restored


# -- cross-references ------------------------------------------------------------------------------------------------


_NOT_ELSEWHERE = re.compile(r"\s+(nec|nos)$")


@cache
def _keys(title: str) -> frozenset[str]:
    """How a reference may name a term: its whole title or its first comma part ("Calculus, calculi" -> both),
    with or without its nonessential modifiers ("Loss (of)" -> "loss") and a closing NEC / NOS ("aircraft" names
    "aircraft NEC")."""
    whole = title.lower().strip()
    keys = {whole, whole.split(",")[0].strip()}
    keys |= {_without_parentheses(key) for key in keys}
    return frozenset(_name_key(key) for key in keys | {_NOT_ELSEWHERE.sub("", key) for key in keys})


def _name_key(name: str) -> str:
    """A name as references are matched on: lower case, a word's plural "s" dropped ("Complications, enterostomy"
    names "Complication(s)")."""
    return " ".join(re.sub(r"(?<=\w{3})s$", "", word) for word in name.lower().split())


def resolve_references(indexes: Iterable[ParsedIndex]) -> None:
    """Fill paths, resolve see / see-also to entries of the same index, and collect aliases (see the docstring)."""
    indexes = list(indexes)
    tables = {name: [parsed for parsed in indexes if parsed.index_name == name] for name in (DRUGS, NEOPLASMS)}
    neoplasm_trees = [_children(table) for table in tables[NEOPLASMS]]
    for parsed in indexes:
        by_id = {entry.entry_id: entry for entry in parsed.entries}
        children = _children(parsed)
        mains = _named(children.get(None, []))
        for entry in parsed.entries:
            parent = by_id.get(entry.parent_id) if entry.parent_id else None
            entry.path = (*(parent.path if parent else ()), entry.title)
        main_sizes = Counter(entry.path[0] for entry in parsed.entries)
        for entry in parsed.entries:
            words = " ".join(entry.path)
            for reference, also in ((entry.see, False), (entry.see_also, True)):
                if not reference:
                    continue
                table_columns = _table_reference(reference)
                if table_columns is not None:
                    # Into the Table of Drugs, only main terms ("Overdose"): a subterm's words ("Shock > drug >
                    # overdose") would reach every row of the table. Into a Neoplasm Table column, a subterm too: it
                    # names a kind of neoplasm the table codes by site ("Metastasis, metastatic > spread", "Carcinoma
                    # > duct > infiltrating > specified site"), its "specified site" level left out.
                    name, column_words = table_columns
                    if entry.level == 0:
                        for table in tables[name]:
                            _alias_columns(table, column_words, f"{reference} {words}", (entry.title,))
                    elif name == NEOPLASMS and not any(_ORIGIN_SITE.search(part) for part in entry.path):
                        levels = tuple(part for part in entry.path if not _SPECIFIED_SITE.search(part))
                        for table in tables[name]:
                            _alias_columns(table, column_words, reference, levels, subterm=True)
                    continue
                cell = _neoplasm_cell(reference, neoplasm_trees)
                if cell is not None:
                    if entry.code is None and not entry.cells:
                        entry.code = cell
                    continue
                target = _resolve(reference, mains, children, partial(_preferred, entry, main_sizes))
                if target is None or target is entry:
                    continue
                if entry.see_entry_id is None:
                    entry.see_entry_id = target.entry_id
                # "History, family - see also History, personal": a sibling to look at too, not another name for
                # it; a "see" (the same thing) or a "see also" to another main term ("Stone" -> Calculus) is one.
                if also and target.path[0] == entry.path[0]:
                    continue
                entry.names = entry.names or target
                # "Broken > bone - see Fracture" names what every "Fracture, ..." main term codes, not the traumatic
                # one chosen: its words are no other name of that main term's entries ("Arthritis > gouty - see Gout"
                # names "Gout, gouty", whose further name is a form of the first, and is one).
                qualifiers = set(_qualifiers(target.title)) if target.parent_id is None else set()
                if (qualifiers and not qualifiers & set(_words(reference))
                        and len(mains.get(_name_key(reference), ())) > 1):
                    continue
                if words not in target.aliases:
                    target.aliases.append(words)
        for entry in parsed.entries:
            if len(entry.aliases) > MAX_REFERRERS:
                entry.aliases = []
        # "Gallstone - see also Calculus, gallbladder" gives no code of its own: a coder following the reference
        # codes K80.20, so the entry gives it too (and its words are measured as that code's wording).
        for entry in parsed.entries:
            if entry.code is None and not entry.cells:
                entry.code = _named_code(entry)
    prose = [parsed for parsed in indexes if parsed.index_name in (DISEASES, EXTERNAL_CAUSES)]
    for table in tables[DRUGS]:
        _alias_intents(table, prose)


def _children(parsed: ParsedIndex) -> dict[int | None, list[IndexEntry]]:
    """Each entry's subterms in document order, under its id (main terms under None)."""
    children: dict[int | None, list[IndexEntry]] = {}
    for entry in parsed.entries:
        children.setdefault(entry.parent_id, []).append(entry)
    return children


def _preferred(referrer: IndexEntry, main_sizes: Mapping[str, int], target: IndexEntry) -> tuple[bool, int]:
    """Among entries one reference may name, the referrer's own main term's ("Fracture, traumatic > arm > humerus -
    see Fracture, humerus"), else the one under the main term with the most entries, which the shared name stands
    for ("Broken > back - see Fracture, vertebra": the traumatic fracture, not the pathological one)."""
    return target.path[0] == referrer.path[0], main_sizes[target.path[0]]


def _neoplasm_cell(reference: str, trees: list[dict[int | None, list[IndexEntry]]]) -> str | None:
    """The code of the Neoplasm Table cell a site-specific reference names ("Neoplasm, skin, benign" -> D23.9)."""
    match = _NEOPLASM_CELL_REFERENCE.match(reference)
    if match is None or _NEOPLASM_TABLE_REFERENCE.match(reference):
        return None
    column_word = next((word for pattern, word in _NEOPLASM_COLUMN_WORDS if pattern.search(match["behaviour"])), None)
    if column_word is None:
        return None
    site = [part for part in map(_without_parentheses, match["site"].split(",")) if part]
    for children in trees:
        for main in children.get(None, []):
            row = _descend(main, site, children)
            cell = next((code for column, code in (row.cells if row else {}).items()
                         if column.lower().startswith(column_word)), None)
            if cell is not None:
                return cell
    return None


def _named_code(entry: IndexEntry) -> str | None:
    """The code of the entry a referring entry names, following references on from there (never in a circle)."""
    seen = {entry.entry_id}
    target = entry.names
    while target is not None and target.entry_id not in seen:
        if target.code is not None:
            return target.code
        seen.add(target.entry_id)
        target = target.names
    return None


# Which of several entries a reference may name comes first: a larger key (see _resolve_parts).
Preference = Callable[[IndexEntry], tuple]


def _resolve(reference: str, mains: Mapping[str, list[IndexEntry]], children: dict[int | None, list[IndexEntry]],
             preference: Preference) -> IndexEntry | None:
    """The entry a reference names: the longest comma-joined prefix that is a main term, then its subterms; a
    reference without commas may name a main term and a subterm in one phrase ("Otitis media": Otitis > media)."""
    parts = [part for part in map(_without_parentheses, reference.split(",")) if part]
    target = _resolve_parts(parts, mains, children, preference)
    if target is None and len(parts) == 1:
        words = parts[0].split()
        for split in range(len(words) - 1, 0, -1):
            target = _resolve_parts([" ".join(words[:split]), " ".join(words[split:])], mains, children,
                                    preference)
            if target is not None:
                break
    return target


def _resolve_parts(parts: list[str], mains: Mapping[str, list[IndexEntry]],
                   children: dict[int | None, list[IndexEntry]], preference: Preference) -> IndexEntry | None:
    # Several main terms may share a name ("Fracture, pathological", "Fracture, traumatic") and the rest of the
    # reference may stand under more than one of them ("see Fracture, humerus"): preference chooses.
    for split in range(len(parts), 0, -1):
        found = [target for main in mains.get(_name_key(", ".join(parts[:split])), ())
                 if (target := _descend(main, parts[split:], children)) is not None]
        if found:
            return max(found, key=preference)
    return None


def _descend(entry: IndexEntry, parts: list[str], children: dict[int | None, list[IndexEntry]]) -> IndexEntry | None:
    """The subterm the parts name below entry, one level a part; None when one is missing (half a reference,
    "Neoplasm, skin, by site", would alias the whole main term: none is safer)."""
    for part in parts:
        found = _subterm(children.get(entry.entry_id, []), part, children)
        if found is None:
            return None
        entry = found
    return entry


def _subterm(below: list[IndexEntry], part: str, children: dict[int | None, list[IndexEntry]]) -> IndexEntry | None:
    """The subterm among below that a part names: one of them, or a connective subterm and one under it ("with
    cholecystitis": with > cholecystitis)."""
    for entry in _children_named(below, part):
        return entry
    words = part.split()
    for cut in range(1, len(words)):
        for connective in _children_named(below, " ".join(words[:cut])):
            for entry in _children_named(children.get(connective.entry_id, []), " ".join(words[cut:])):
                return entry
    return None


def _named(entries: list[IndexEntry]) -> dict[str, list[IndexEntry]]:
    """The entries under each name a reference may give them (_keys), in document order: the main terms are looked
    up once per reference, and a scan of the tens of thousands of them for each took half a minute of a load."""
    named: dict[str, list[IndexEntry]] = {}
    for entry in entries:
        for key in _keys(entry.title):
            named.setdefault(key, []).append(entry)
    return named


def _children_named(entries: list[IndexEntry], name: str) -> list[IndexEntry]:
    wanted = _name_key(name)
    return [entry for entry in entries if wanted in _keys(entry.title)]


def _table_reference(reference: str) -> tuple[str, tuple] | None:
    """(table, its column words) when a reference sends the reader to a whole column of a table."""
    if _DRUG_TABLE_REFERENCE.match(reference):
        return DRUGS, _DRUG_COLUMN_WORDS
    if _NEOPLASM_TABLE_REFERENCE.match(reference):
        return NEOPLASMS, _NEOPLASM_COLUMN_WORDS
    return None


def _alias_columns(table: ParsedIndex, column_words: tuple, evidence: str, levels: tuple[str, ...],
                   subterm: bool = False) -> None:
    words = " ".join(levels)
    for pattern, column_word in column_words:
        if pattern.search(evidence):
            for column in table.columns:
                if column.lower().startswith(column_word):
                    aliases = table.column_alias_levels.setdefault(column, [])
                    if all(" ".join(known) != words or from_subterm != subterm for known, from_subterm in aliases):
                        aliases.append((levels, subterm))
            return


# Filler an Index name carries that no term says ("Self-harm NEC", "Injury, injured NOS").
_FILLER_WORDS = frozenset({"nec", "nos"})


def _intent_key(text: str) -> frozenset[str]:
    """The words of a name as an intent is matched on: order, punctuation, NEC / NOS and plurals set aside."""
    return frozenset(_name_key(word) for word in re.findall(r"[\w-]+", text.lower()) if word not in _FILLER_WORDS)


def _alias_intents(table: ParsedIndex, prose: list[ParsedIndex]) -> None:
    """Each Table of Drugs poisoning column also named as the Index names its intent: a main term called by the
    intent ("Assault") or referred to from it ("Self-harm NEC > intentional - see Suicide") gives its title and its
    plain referrers ("Homicide", "Murder"; "Suicide, suicidal"), so "suicide attempt with warfarin" names the
    intentional self-harm column."""
    intents = {}
    for column in table.columns:
        intent = re.sub(r"\([^)]*\)", " ", column)
        if intent.lower().startswith("poisoning "):
            intents[column] = _intent_key(intent[len("poisoning "):])
    if not intents:
        return
    for parsed in prose:
        for entry in parsed.entries:
            if entry.parent_id is not None:
                continue
            keys = {_intent_key(entry.title), *(_intent_key(alias) for alias in entry.aliases)}
            for column, wanted in intents.items():
                if wanted not in keys:
                    continue
                # the title with its modifiers, which its last name holds ("Suicide, suicidal (attempted)": a term
                # says "suicide" or "suicidal attempt"); a referrer with a comma is a path flattened into words
                # ("Injury, injured NOS purposely"), no name
                title = f"{entry.title} {entry.nemod}" if entry.nemod else entry.title
                for name in (title, *(alias for alias in entry.aliases if "," not in alias)):
                    levels = (" ".join(w for w in name.split() if w.lower() not in _FILLER_WORDS),)
                    aliases = table.column_alias_levels.setdefault(column, [])
                    if all(known != levels for known, _ in aliases):
                        aliases.append((levels, False))


# -- rows --------------------------------------------------------------------------------------------------------------


def index_rows(parsed: ParsedIndex, titles: Mapping[str, str] | None = None) -> list[dict]:
    """Rows of icd10cm_index_entry for one resolved index: one per code given (one per filled cell in a table).

    titles ({code: Tabular title}) tells which words of a main term's further names its codes' titles carry.
    """
    by_id = {entry.entry_id: entry for entry in parsed.entries}
    main_aliases, subterm_aliases_of = parsed.column_aliases, parsed.column_subterm_aliases
    qualifiers = carried_qualifiers(parsed, titles or {})
    rows = []
    for entry in parsed.entries:
        lineage = [entry]
        while lineage[-1].parent_id is not None:
            lineage.append(by_id[lineage[-1].parent_id])
        lineage.reverse()
        nemods = " ".join(item.nemod for item in lineage if item.nemod)
        aliases = list(dict.fromkeys(alias for item in lineage for alias in item.aliases))
        # What precision is measured on: the main term's first name, the further names' words its codes' titles
        # carry, and each subterm, modifiers left out.
        core = " ".join([lineage[0].title.split(",")[0], *qualifiers.get(lineage[0].entry_id, ()),
                         *(item.title for item in lineage[1:])])
        cells = entry.cells.items() if entry.cells else [(None, entry.code)]
        for column, code in cells:
            column_aliases = main_aliases.get(column, []) if column else []
            subterm_aliases = subterm_aliases_of.get(column, []) if column else []
            # the words a subterm's reference alone gives this cell: none of its main terms', path's or column's
            said = set(_words(" ".join([*entry.path, nemods, *aliases, column or "", *column_aliases])))
            subterm_only = [word for word in dict.fromkeys(_words(" ".join(subterm_aliases))) if word not in said]
            rows.append({
                "index_name": parsed.index_name, "entry_id": entry.entry_id, "parent_id": entry.parent_id,
                "level": entry.level, "title": entry.title, "nemod": entry.nemod, "path": list(entry.path),
                "column_name": column, "code": code, "see": entry.see, "see_also": entry.see_also,
                "see_entry_id": entry.see_entry_id, "aliases": entry.aliases or None,
                "search_text": " ".join(part for part in (" ".join(entry.path), nemods, " ".join(aliases),
                                                          column or "", " ".join(column_aliases),
                                                          " ".join(subterm_aliases)) if part),
                "core_text": f"{core} {_without_parentheses(column)}" if column else core,
                "subterm_text": " ".join(subterm_only) or None,
                "source_file": parsed.source_file,
            })
    return rows


def _qualifiers(title: str) -> list[str]:
    """The words of a main term's further names that are not forms of its first name: "traumatic" of "Fracture,
    traumatic", none of "Gout, gouty"."""
    first, _, further = _without_parentheses(title).partition(",")
    first_words = _words(first)
    return [word for word in dict.fromkeys(_words(further))
            if not any(word[:_FORM_PREFIX] == other[:_FORM_PREFIX] for other in first_words)]


def carried_qualifiers(parsed: ParsedIndex, titles: Mapping[str, str]) -> dict[int, tuple[str, ...]]:
    """The words of each main term's further names that most of its codes' titles carry: {main term id: words}.

    "Fracture, pathological" and "Fracture, traumatic" are both "Fracture" first, but M84.4- reads "Pathological
    fracture" while S-codes never say "traumatic": the first qualifier is part of what the codes mean, the second is
    what a fracture is unless said otherwise. A further name that is another form of the first ("Epilepsy,
    epileptic", "Bite, bitten by") is no qualifier, however often titles use it.
    """
    main_of: dict[int, IndexEntry] = {}
    codes_under: dict[int, list[str]] = {}
    for entry in parsed.entries:
        main = entry if entry.parent_id is None else main_of[entry.parent_id]
        main_of[entry.entry_id] = main
        for code in (entry.cells.values() if entry.cells else [entry.code]):
            title = titles.get((code or "").rstrip(".-"))
            if title:
                codes_under.setdefault(main.entry_id, []).append(title)
    carried = {}
    for main_id, code_titles in codes_under.items():
        candidates = _qualifiers(main_of[main_id].title)
        title_words = [set(_words(title)) for title in code_titles]
        kept = tuple(word for word in candidates
                     if 2 * sum(word in words for words in title_words) > len(title_words))
        if kept:
            carried[main_id] = kept
    return carried


COLUMN_ALIAS_COLUMNS: list[tuple[str, str]] = [
    ("index_name", "text"),
    ("column_name", "text"),
    ("alias_n", "integer"),
    ("alias", "text"),
    ("from_subterm", "boolean"),
    ("level_n", "integer"),
    ("variant", "text"),
]
# Words of a level that say nothing a term must repeat: "Neoplasm, neoplastic > metastatic NEC"
_RESIDUAL_WORDS = re.compile(r"\b(?:NEC|NOS)\b")


def column_alias_rows(parsed: ParsedIndex) -> list[dict]:
    """Rows of icd10cm_index_column_alias for one table: each alias of a column, one row per level and per way the
    level may be written (a main term's comma-separated names: "Metastasis, metastatic" is either word)."""
    rows = []
    for column, aliases in parsed.column_alias_levels.items():
        for alias_n, (levels, subterm) in enumerate(aliases):
            for level_n, level in enumerate(levels):
                variants = level.split(",") if level_n == 0 else [level]
                for variant in dict.fromkeys(_RESIDUAL_WORDS.sub(" ", v).strip() for v in variants):
                    if variant:
                        rows.append({"index_name": parsed.index_name, "column_name": column, "alias_n": alias_n,
                                     "alias": " ".join(levels), "from_subterm": subterm, "level_n": level_n,
                                     "variant": variant})
    return rows


def _words(text: str) -> list[str]:
    """A text's words, lower-cased, split at anything but a letter, digit or apostrophe."""
    return [word for word in re.split(r"[^a-z0-9']+", text.lower()) if word]


def _without_parentheses(text: str) -> str:
    return " ".join(re.sub(r"\([^)]*\)", " ", text).split())


def parse_index_files(files: dict[str, Path], titles: Mapping[str, str] | None = None) -> list[ParsedIndex]:
    """Parse a release's index members ({member name: path}) and resolve their references together.

    The real Index to Diseases XML wins over the derived CSV stand-in when both are present. titles ({code: Tabular
    title}) restores what the stand-in lost after a connective (restore_connective_objects).
    """
    parsed: dict[str, ParsedIndex] = {}
    for name in sorted(files, key=lambda member: bool(DERIVED_INDEX_CSV.search(member))):
        kind = index_member_kind(name)
        if kind is None or kind in parsed:
            continue
        path = files[name]
        if DERIVED_INDEX_CSV.search(name):
            parsed[kind] = parse_derived_index_csv(path)
            restore_connective_objects(parsed[kind], titles or {})
        else:
            parsed[kind] = parse_index_xml(path, kind)
    # Drug tables first: references from the other indexes add aliases to their columns.
    ordered = sorted(parsed.values(), key=lambda item: item.index_name != DRUGS)
    resolve_references(ordered)
    return ordered
