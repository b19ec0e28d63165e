"""The words coders use for what code descriptions and policies say: abbreviations, lay terms and brand names.

One table, ``data/synonyms.csv``, read here and nowhere else. Each row maps a term as people write it ("copd",
"heart attack", "zofran", "CPAP") to wording the code tables and policies use, with its kind and the code system
it points to. Three readers take their part of it:

- code documents (medrag.sources): the rows with a ``documents`` value spell out an abbreviation found in a code's
  description, matched in any case (``any_case``) or only as written (``exact``: AIDS, not hearing aids);
- the code finder (medrag_code_synonyms in SQL, rendered from `finder_synonyms`): the lower-case query terms, plus
  the ``any_case`` document abbreviations the query terms do not define;
- the full-text search (the medrag_synonym table, written from `search_synonyms`): every row but the ``exact``
  ones, its term spelt as the search splits a query.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache

from medrag.core.data import DataFileError, data_text
from medrag.core.words import TERM

SYNONYMS_FILE = "synonyms.csv"
COLUMNS = ("term", "expansion", "kind", "system", "documents")
KINDS = ("abbreviation", "lay", "brand", "variant")
# Values of the system column; "both" hints at ICD-10-CM and HCPCS, an empty cell at neither.
SYSTEM_VALUES = {"ICD-10-CM": ("ICD-10-CM",), "HCPCS": ("HCPCS",), "both": ("ICD-10-CM", "HCPCS"), "": ()}
# How a row expands code documents' text: not at all (""), in any case, or only in the case written.
DOCUMENT_MATCHES = ("", "any_case", "exact")
# What the full-text search keeps of a query: lower case, runs of anything but letters and digits one space.
_NON_WORD = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class SynonymRow:
    """One row of the table: a term, one of its expansions, its kind, systems and how it expands code documents."""

    term: str
    expansion: str
    kind: str
    systems: tuple[str, ...]
    documents: str


@dataclass(frozen=True)
class SynonymEntry:
    """One term with the wordings it may stand for and the systems it hints at."""

    term: str
    expansions: tuple[str, ...]
    kind: str
    systems: tuple[str, ...]

    @property
    def words(self) -> tuple[str, ...]:
        """The term's words, as a term's words are split (lower case)."""
        return tuple(self.term.split())


@dataclass(frozen=True)
class SynonymMatch:
    """Where an entry's term occurs in a list of words: words[start:end]."""

    entry: SynonymEntry
    start: int
    end: int

    @property
    def phrase(self) -> str:
        """The matched words as typed (lower case)."""
        return self.entry.term


class SynonymTable:
    """Terms to expansions, matched on whole words, longest term first, without overlaps."""

    def __init__(self, entries: list[SynonymEntry]) -> None:
        self.entries = {entry.term: entry for entry in entries}
        self.longest = max((len(entry.words) for entry in entries), default=0)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, term: str) -> SynonymEntry | None:
        """The entry for a term (lower case, single-spaced), if any."""
        return self.entries.get(term)

    def matches(self, words: list[str] | tuple[str, ...]) -> list[SynonymMatch]:
        """Entries whose term occurs in words, scanning left to right and preferring the longest term.

        A hyphenated word is also its words apart: "behind-the-ear" is the term "behind the ear".
        """
        found, index = [], 0
        while index < len(words):
            for length in range(min(self.longest, len(words) - index), 0, -1):
                phrase = " ".join(words[index:index + length])
                entry = self.entries.get(phrase)
                if entry is None and length == 1:
                    entry = self.entries.get(phrase.replace("-", " "))
                if entry is not None:
                    found.append(SynonymMatch(entry, index, index + length))
                    index += length
                    break
            else:
                index += 1
        return found


def _checked_row(row: dict[str, str | None], where: str) -> SynonymRow:
    term, expansion = (row["term"] or "").strip(), (row["expansion"] or "").strip()
    kind, system = (row["kind"] or "").strip(), (row["system"] or "").strip()
    documents = (row["documents"] or "").strip()
    if documents not in DOCUMENT_MATCHES:
        raise DataFileError(f"{where}: documents {documents!r} is not any_case, exact or empty")
    # a query term is matched in lower-cased words; a document abbreviation as it is written in descriptions
    if not (TERM.fullmatch(term) if not documents else term):
        raise DataFileError(f"{where}: term {term!r} must be lower-case words separated by single spaces")
    if not expansion or expansion.lower() == term.lower():
        raise DataFileError(f"{where}: {term!r} needs an expansion that differs from it")
    if kind not in KINDS:
        raise DataFileError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if system not in SYSTEM_VALUES:
        raise DataFileError(f"{where}: system {system!r} is not ICD-10-CM, HCPCS, both or empty")
    return SynonymRow(term, expansion, kind, SYSTEM_VALUES[system], documents)


def parse_synonyms(text: str, source: str = SYNONYMS_FILE) -> tuple[SynonymRow, ...]:
    """The rows of a synonym CSV, checked: header, term spelling, known kinds and systems, no repeats."""
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise DataFileError(f"{source}: header must be {','.join(COLUMNS)}, not {','.join(reader.fieldnames or [])}")
    parsed: list[SynonymRow] = []
    seen: set[tuple[str, str, bool]] = set()
    kinds: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line, raw in enumerate(reader, start=2):
        where = f"{source} line {line}"
        row = _checked_row(raw, where)
        key = (row.term, row.expansion.lower(), bool(row.documents))
        if key in seen:
            raise DataFileError(f"{where}: {row.term!r} -> {row.expansion!r} is listed twice")
        seen.add(key)
        if not row.documents:
            if kinds.setdefault(row.term, (row.kind, row.systems)) != (row.kind, row.systems):
                raise DataFileError(f"{where}: {row.term!r} has another kind or system on an earlier line")
        parsed.append(row)
    return tuple(parsed)


@cache
def synonym_rows() -> tuple[SynonymRow, ...]:
    """Every row of the packaged table, in file order."""
    return parse_synonyms(data_text(SYNONYMS_FILE))


def _grouped(rows: list[SynonymRow]) -> list[SynonymEntry]:
    grouped: dict[str, SynonymEntry] = {}
    for row in rows:
        previous = grouped.get(row.term)
        expansions = (*previous.expansions, row.expansion) if previous else (row.expansion,)
        grouped[row.term] = SynonymEntry(row.term, expansions, row.kind, row.systems)
    return list(grouped.values())


def query_entries() -> list[SynonymEntry]:
    """The lower-case query terms (the rows that do not expand code documents), grouped by term."""
    return _grouped([row for row in synonym_rows() if not row.documents])


@cache
def finder_synonyms() -> SynonymTable:
    """What the code finder matches a term's words against: the query terms, plus the document abbreviations that
    match in any case and that no query term defines (an ``exact`` one, AIDS / aids, is unsafe in lower case)."""
    entries = query_entries()
    known = {entry.term for entry in entries}
    abbreviations = [
        SynonymRow(row.term.lower(), row.expansion, row.kind, row.systems, row.documents)
        for row in synonym_rows()
        if row.documents == "any_case" and TERM.fullmatch(row.term.lower()) and row.term.lower() not in known
    ]
    return SynonymTable(entries + _grouped(abbreviations))


def search_synonyms() -> set[tuple[str, str]]:
    """(term, expansion) pairs the full-text query adds, its terms as medrag_text_queries sees a query."""
    # the search matches terms in the lower-cased query: "hearing aids" must not expand to AIDS's wording
    return {(_NON_WORD.sub(" ", row.term.lower()).strip(), row.expansion)
            for row in synonym_rows() if row.documents != "exact"}


# --------------------------------------------------------------------------------------------- code documents


@dataclass(frozen=True)
class _DocumentAbbreviations:
    rows: tuple[SynonymRow, ...]
    # One alternation per matching mode, so that a description is scanned twice rather than once per entry.
    any_case: re.Pattern[str] | None
    exact_case: re.Pattern[str] | None


def _alternation(abbreviations: list[str], flags: int) -> re.Pattern[str] | None:
    if not abbreviations:
        return None
    longest_first = sorted(set(abbreviations), key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, longest_first))})(?![\w-])", flags)


@cache
def _document_abbreviations() -> _DocumentAbbreviations:
    rows = tuple(row for row in synonym_rows() if row.documents)
    return _DocumentAbbreviations(
        rows,
        _alternation([row.term for row in rows if row.documents == "any_case"], re.IGNORECASE),
        _alternation([row.term for row in rows if row.documents == "exact"], 0),
    )


def document_abbreviations(*, exact_case: bool = True) -> dict[str, list[str]]:
    """Abbreviation -> its expansions, as code documents spell them out (exact_case=False: without the
    abbreviations that are also ordinary words, AIDS / aids, for matching text that has been lower-cased)."""
    synonyms: dict[str, list[str]] = {}
    for row in _document_abbreviations().rows:
        if row.documents == "exact" and not exact_case:
            continue
        synonyms.setdefault(row.term, []).append(row.expansion)
    return synonyms


def expand_abbreviations(text: str) -> list[tuple[str, str]]:
    """(abbreviation, expansion) for each known abbreviation in text whose expansion the text lacks."""
    table = _document_abbreviations()
    found: set[str] = set()
    if table.any_case is not None:
        found.update(match.group(0).lower() for match in table.any_case.finditer(text))
    exact: set[str] = set()
    if table.exact_case is not None:
        exact.update(match.group(0) for match in table.exact_case.finditer(text))
    lowered = text.lower()
    return [
        (row.term, row.expansion)
        for row in table.rows
        if (row.term in exact if row.documents == "exact" else row.term.lower() in found)
        and row.expansion.lower() not in lowered
    ]
