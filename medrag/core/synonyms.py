"""The words coders use for what code descriptions and policies say: abbreviations, lay terms and brand names.

One table, ``data/synonyms.csv``, read here and nowhere else, and written whole into the database's medrag_synonym
(by generated.sql, from `synonym_rows_sql`). Each row maps a term as people write it ("copd", "heart attack",
"zofran", "CPAP") to wording the code tables and policies use, with its kind and the code system it points to.
Three readers take their part of it:

- code documents (medrag.sources, through `expand_abbreviations`): the rows with a ``documents`` value spell out
  an abbreviation found in a code's description, matched in any case (``any_case``) or only as written
  (``exact``: AIDS, not hearing aids);
- the code finder (the view medrag_finder_synonym, sql rendered by medrag.codes.synonyms): the lower-case query
  terms (rows without a ``documents`` value), plus the ``any_case`` document abbreviations no query term defines;
- the full-text search (the view medrag_search_synonym, sql/views.sql): every row but the ``exact`` ones, its term
  spelt as the search splits a query.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache

from medrag.core.constants_sql import constant_function
from medrag.core.data import DataFileError, data_text
from medrag.core.words import TERM

SYNONYMS_FILE = "synonyms.csv"
COLUMNS = ("term", "expansion", "kind", "system", "documents")
KINDS = ("abbreviation", "lay", "brand", "variant")
# Values of the system column; "both" hints at ICD-10-CM and HCPCS, an empty cell at neither.
SYSTEM_VALUES = {"ICD-10-CM": ("ICD-10-CM",), "HCPCS": ("HCPCS",), "both": ("ICD-10-CM", "HCPCS"), "": ()}
# The stop words that negate: a synonym phrase matched by its keys (medrag_synonym_word_key) never spans one.
NEGATING_STOP_WORDS = ("no", "not", "nor")
# How a row expands code documents' text: not at all (""), in any case, or only in the case written.
DOCUMENT_MATCHES = ("", "any_case", "exact")


@dataclass(frozen=True)
class SynonymRow:
    """One row of the table: a term, one of its expansions, its kind, systems and how it expands code documents."""

    term: str
    expansion: str
    kind: str
    systems: tuple[str, ...]
    documents: str


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


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# The search's synonym terms of two or more keyed words by their keys (term -> key), kept as a constant
# (medrag.core.constants_sql).
_SEARCH_KEYS = """(
        SELECT coalesce(jsonb_object_agg(t.term, t.key), '{}')
        FROM (SELECT DISTINCT s.term, medrag_synonym_phrase_key(s.term) AS key FROM medrag_search_synonym s) t
        WHERE t.key IS NOT NULL)"""


def synonym_rows_sql() -> str:
    """The statements that make medrag_synonym hold every row of the table, in file order (for generated.sql)."""
    values = ",\n    ".join(
        f"({position}, {_sql_text(row.term)}, {_sql_text(row.expansion)}, {_sql_text(row.kind)}, "
        f"ARRAY[{', '.join(_sql_text(system) for system in row.systems)}]::text[], {_sql_text(row.documents)})"
        for position, row in enumerate(synonym_rows(), start=1))
    negating = ", ".join(_sql_text(word) for word in NEGATING_STOP_WORDS)
    return f"""
-- The synonym table (medrag/data/synonyms.csv, read by medrag/core/synonyms.py), row by row in file order. Every
-- reader reads it here: the full-text search through medrag_search_synonym, the code finder through
-- medrag_finder_synonym; the code documents were written from the same rows.
DELETE FROM medrag_synonym;
INSERT INTO medrag_synonym (position, term, expansion, kind, systems, documents) VALUES
    {values};

-- A word as a synonym key reads it: its lexemes (the english configuration's, as the full-text index stems), empty
-- for a stop word. A phrase and a phrase of the table with the same keys in the same order, stop words aside, say
-- the same thing: "blood clots in the lungs" is "blood clot in the lung", "ringing in both ears" is "ringing in the
-- ears". The code finder (medrag_code_synonym_matches) and the search (medrag_search_synonym_keys) both read it.
CREATE OR REPLACE FUNCTION medrag_synonym_word_key(word text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT array_to_string(tsvector_to_array(to_tsvector('english', word)), ' ')
$$;

-- The keys of words as a phrase is matched by them: the keys of its keyed words between single spaces, a stop word
-- that negates ("no", "not", "nor") a "|" that no phrase spans, padded with spaces for LIKE.
CREATE OR REPLACE FUNCTION medrag_synonym_padded_keys(words text[])
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ' ' || coalesce(string_agg(k.key, ' ' ORDER BY k.n), '') || ' '
    FROM (SELECT x.n, CASE WHEN x.word IN ({negating}) THEN '|' ELSE medrag_synonym_word_key(x.word) END AS key
          FROM unnest(words) WITH ORDINALITY AS x(word, n)) k
    WHERE k.key <> ''
$$;

-- A term's keys (its padded keys, trimmed) when two or more of its words have one, else NULL: a one-word term
-- matches only as written, as its stem may be another word's ("aids", "aid"). The finder and the search key their
-- terms by it.
CREATE OR REPLACE FUNCTION medrag_synonym_phrase_key(term text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN (SELECT count(*) FROM unnest(string_to_array(term, ' ')) AS w
                      WHERE medrag_synonym_word_key(w) <> '') >= 2
                THEN btrim(medrag_synonym_padded_keys(string_to_array(term, ' '))) END
$$;

-- The search's synonym terms of two or more keyed words by their keys (term -> key), built while this script runs,
-- its only writer, and kept as a constant as the finder's synonyms are (medrag.codes.synonyms): a query holds such a
-- term when its padded keys hold the term's.
DO $build$
BEGIN
{constant_function("medrag_search_synonym_keys", "jsonb", _SEARCH_KEYS)}
END
$build$;
"""


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
