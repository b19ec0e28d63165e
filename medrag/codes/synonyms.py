"""The words coders use for what code descriptions say: abbreviations, lay terms and drug brand names.

``data/clinical_synonyms.csv`` maps a term as people type it ("copd", "heart attack", "zofran") to wording the
code tables use ("chronic obstructive pulmonary disease", "myocardial infarction", "ondansetron"), with the code
system the term points to. The abbreviations of ``data/code_synonyms.csv`` (written for the HCPCS document text)
are added where this table has no entry. A finder consults the table when a term's own words find too little.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cache

from medrag.core.errors import MedragError
from medrag.index.enrichment import data_text, load_synonyms

CLINICAL_SYNONYMS_FILE = "clinical_synonyms.csv"
COLUMNS = ("term", "expansion", "kind", "system")
KINDS = ("abbreviation", "lay", "brand", "variant")
# Values of the system column; "both" hints at ICD-10-CM and HCPCS, an empty cell at neither.
SYSTEM_VALUES = {"ICD-10-CM": ("ICD-10-CM",), "HCPCS": ("HCPCS",), "both": ("ICD-10-CM", "HCPCS"), "": ()}
_TERM = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*(?: [a-z0-9]+(?:[-'][a-z0-9]+)*)*")


class SynonymDataError(MedragError):
    """The packaged synonym table is malformed."""


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
        self._longest = max((len(entry.words) for entry in entries), default=0)

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
            for length in range(min(self._longest, len(words) - index), 0, -1):
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


def parse_clinical_synonyms(text: str, source: str = CLINICAL_SYNONYMS_FILE) -> list[SynonymEntry]:
    """Entries of a clinical synonym CSV, checked: header, lower-case terms, known kinds and systems, no repeats."""
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise SynonymDataError(f"{source}: header must be {','.join(COLUMNS)}, not {','.join(reader.fieldnames or [])}")
    grouped: dict[str, SynonymEntry] = {}
    seen: set[tuple[str, str]] = set()
    for line, row in enumerate(reader, start=2):
        where = f"{source} line {line}"
        term, expansion = (row["term"] or "").strip(), (row["expansion"] or "").strip()
        kind, system = (row["kind"] or "").strip(), (row["system"] or "").strip()
        if not _TERM.fullmatch(term):
            raise SynonymDataError(f"{where}: term {term!r} must be lower-case words separated by single spaces")
        if not expansion or expansion.lower() == term:
            raise SynonymDataError(f"{where}: {term!r} needs an expansion that differs from it")
        if kind not in KINDS:
            raise SynonymDataError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if system not in SYSTEM_VALUES:
            raise SynonymDataError(f"{where}: system {system!r} is not ICD-10-CM, HCPCS, both or empty")
        if (term, expansion.lower()) in seen:
            raise SynonymDataError(f"{where}: {term!r} -> {expansion!r} is listed twice")
        seen.add((term, expansion.lower()))
        previous = grouped.get(term)
        if previous is not None and (previous.kind, previous.systems) != (kind, SYSTEM_VALUES[system]):
            raise SynonymDataError(f"{where}: {term!r} has another kind or system on an earlier line")
        expansions = (*previous.expansions, expansion) if previous else (expansion,)
        grouped[term] = SynonymEntry(term, expansions, kind, SYSTEM_VALUES[system])
    return list(grouped.values())


def _code_synonym_entries(known: set[str]) -> list[SynonymEntry]:
    """Case-insensitive abbreviations of code_synonyms.csv (read once, by medrag.index.enrichment) that the clinical
    table does not define; "exact" rows (AIDS / aids: also ordinary words) are unsafe in lower-cased terms."""
    grouped: dict[str, list[str]] = {}
    for abbreviation, expansions in load_synonyms(exact_case=False).items():
        term = abbreviation.lower()
        if _TERM.fullmatch(term) and term not in known:
            grouped.setdefault(term, []).extend(expansions)
    return [SynonymEntry(term, tuple(expansions), "abbreviation", ()) for term, expansions in grouped.items()]


def clinical_synonym_entries() -> list[SynonymEntry]:
    """The entries of the packaged clinical_synonyms.csv alone."""
    return parse_clinical_synonyms(data_text(CLINICAL_SYNONYMS_FILE))


@cache
def load_clinical_synonyms() -> SynonymTable:
    """The packaged clinical synonym table plus the code-document abbreviations it does not redefine."""
    entries = clinical_synonym_entries()
    return SynonymTable(entries + _code_synonym_entries({entry.term for entry in entries}))


def synonyms_sql() -> str:
    """medrag_code_synonyms() and medrag_code_synonym_matches(words): the table load_clinical_synonyms() reads, for
    the term analysis in SQL, rendered into generated.sql."""
    table = load_clinical_synonyms()
    entries = {term: {"expansions": list(entry.expansions), "kind": entry.kind, "systems": list(entry.systems)}
               for term, entry in table.entries.items()}
    literal = json.dumps(entries, sort_keys=True).replace("'", "''")
    return f"""
-- The clinical synonym table (medrag/data/clinical_synonyms.csv, plus the abbreviations of code_synonyms.csv it does
-- not define): term -> expansions, kind and the systems it hints at. Rendered by medrag/codes/synonyms.py.
CREATE OR REPLACE FUNCTION medrag_code_synonyms()
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '{literal}'::jsonb
$$;

-- Where the table's terms occur in a term's words, scanning left to right and preferring the longest term, without
-- overlaps; a hyphenated word is also its words apart ("behind-the-ear" is the term "behind the ear"). start_at is
-- the first word's index from 0 and end_at the index after the last, as Python slices.
CREATE OR REPLACE FUNCTION medrag_code_synonym_matches(words text[])
RETURNS TABLE (term text, start_at integer, end_at integer)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    entries constant jsonb := medrag_code_synonyms();
    longest constant integer := {table._longest};
    total constant integer := coalesce(cardinality(words), 0);
    i integer := 1;
    length integer;
    phrase text;
BEGIN
    WHILE i <= total LOOP
        term := NULL;
        FOR length IN REVERSE least(longest, total - i + 1) .. 1 LOOP
            phrase := array_to_string(words[i:i + length - 1], ' ');
            IF entries ? phrase THEN
                term := phrase;
            ELSIF length = 1 AND entries ? replace(phrase, '-', ' ') THEN
                term := replace(phrase, '-', ' ');
            END IF;
            IF term IS NOT NULL THEN
                start_at := i - 1;
                end_at := i - 1 + length;
                RETURN NEXT;
                i := i + length;
                EXIT;
            END IF;
        END LOOP;
        IF term IS NULL THEN
            i := i + 1;
        END IF;
    END LOOP;
END
$$;
"""
