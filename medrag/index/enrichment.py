"""Searchable text for terse codes: HCPCS categories, expanded abbreviations, LCD cross-links, ICD-10-CM context.

A code's own description ("Cont airway pressure device") rarely shares words with a question ("does Medicare
pay for a CPAP machine?"). Each code document therefore adds what a coder knows around it: the HCPCS Level II
section and sub-range it sits in (``data/hcpcs_categories.csv``), the abbreviations in its description spelled
out (``data/code_synonyms.csv``), the LCDs that list it, and for ICD-10-CM its parents, chapter, section and
instructional notes. The texts are fitted to the embedding model's budget, dropping the least useful parts
(LCD lists and excludes notes first) when a code has more than fits.
"""

from __future__ import annotations

import bisect
import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from medrag.core.errors import MedragError
from medrag.index.chunking import TokenCounter, default_token_counter

HCPCS_CATEGORIES_FILE = "hcpcs_categories.csv"
CODE_SYNONYMS_FILE = "code_synonyms.csv"
MODIFIER = "Modifier"
UNCLASSIFIED = "Unclassified HCPCS Level II code"

_HCPCS_LEVEL_II_CODE = re.compile(r"[A-Z][0-9]{4}")


class EnrichmentDataError(MedragError):
    """A packaged enrichment table (HCPCS categories, code synonyms) is malformed."""


# --------------------------------------------------------------------------------------------- HCPCS categories


@dataclass(frozen=True)
class HcpcsCategory:
    """Where a HCPCS Level II code sits: its letter section and the sub-range within it."""

    section: str
    category: str
    first_code: str | None = None
    last_code: str | None = None

    @property
    def text(self) -> str:
        """"Section > category" (just one of them when they say the same)."""
        if self.category == self.section:
            return self.section
        return f"{self.section} > {self.category}"


@dataclass(frozen=True)
class _CategoryTable:
    ranges: tuple[HcpcsCategory, ...]
    first_codes: tuple[str, ...]
    sections: dict[str, str] = field(default_factory=dict)  # letter -> section title


def data_text(name: str) -> str:
    """A data file packaged with medrag (medrag/data/), as text."""
    return resources.files("medrag").joinpath("data", name).read_text(encoding="utf-8")


def parse_hcpcs_categories(text: str, *, source: str = HCPCS_CATEGORIES_FILE) -> tuple[HcpcsCategory, ...]:
    """Category ranges from CSV text, checked: HCPCS Level II codes, ordered, non-overlapping, one title a letter."""
    ranges: list[HcpcsCategory] = []
    sections: dict[str, str] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        first, last = row.get("first_code") or "", row.get("last_code") or ""
        section, category = (row.get("section") or "").strip(), (row.get("category") or "").strip()
        where = f"{source} line {line}"
        if not (_HCPCS_LEVEL_II_CODE.fullmatch(first) and _HCPCS_LEVEL_II_CODE.fullmatch(last)):
            raise EnrichmentDataError(f"{where}: {first}-{last} is not a range of HCPCS Level II codes")
        if first[0] != last[0] or first > last:
            raise EnrichmentDataError(f"{where}: {first}-{last} is empty or spans two letters")
        if ranges and ranges[-1].last_code >= first:
            raise EnrichmentDataError(f"{where}: {first}-{last} overlaps or precedes {ranges[-1].last_code}")
        if not section or not category:
            raise EnrichmentDataError(f"{where}: a range needs a section and a category title")
        if sections.setdefault(first[0], section) != section:
            raise EnrichmentDataError(f"{where}: letter {first[0]} already has section {sections[first[0]]!r}")
        ranges.append(HcpcsCategory(section, category, first, last))
    if not ranges:
        raise EnrichmentDataError(f"{source}: no category ranges")
    return tuple(ranges)


@cache
def _category_table() -> _CategoryTable:
    ranges = parse_hcpcs_categories(data_text(HCPCS_CATEGORIES_FILE))
    sections = {item.first_code[0]: item.section for item in ranges}
    return _CategoryTable(ranges, tuple(item.first_code for item in ranges), sections)


def hcpcs_category_ranges() -> tuple[HcpcsCategory, ...]:
    """Every packaged sub-range, in code order."""
    return _category_table().ranges


def hcpcs_category(code: str, kind: str) -> HcpcsCategory:
    """The section and sub-range of a HCPCS Level II code ("Modifier" for modifiers)."""
    if kind == "modifier":
        return HcpcsCategory(MODIFIER, MODIFIER)
    if kind != "procedure":
        raise ValueError(f"HCPCS record kind must be 'procedure' or 'modifier', not {kind!r}")
    table = _category_table()
    code = code.strip().upper()
    index = bisect.bisect_right(table.first_codes, code) - 1
    if index >= 0 and table.ranges[index].last_code >= code:
        return table.ranges[index]
    # A code CMS adds between the listed sub-ranges still belongs to its letter's section.
    section = table.sections.get(code[:1]) if _HCPCS_LEVEL_II_CODE.fullmatch(code) else None
    return HcpcsCategory(section, section) if section else HcpcsCategory(UNCLASSIFIED, UNCLASSIFIED)


# --------------------------------------------------------------------------------------------- synonyms


@dataclass(frozen=True)
class _Synonym:
    abbreviation: str
    expansion: str
    exact_case: bool


@dataclass(frozen=True)
class _SynonymTable:
    synonyms: tuple[_Synonym, ...]
    # One alternation per matching mode, so that a description is scanned twice rather than once per entry.
    any_case: re.Pattern[str] | None
    exact_case: re.Pattern[str] | None


def _alternation(abbreviations: list[str], flags: int) -> re.Pattern[str] | None:
    if not abbreviations:
        return None
    longest_first = sorted(set(abbreviations), key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, longest_first))})(?![\w-])", flags)


@cache
def _synonym_table() -> _SynonymTable:
    synonyms = []
    for line, row in enumerate(csv.DictReader(data_text(CODE_SYNONYMS_FILE).splitlines()), start=2):
        abbreviation, expansion, match = row["abbreviation"].strip(), row["expansion"].strip(), row["match"]
        if not abbreviation or not expansion or match not in ("exact", "any_case"):
            raise EnrichmentDataError(f"{CODE_SYNONYMS_FILE} line {line}: need abbreviation, expansion, exact|any_case")
        # "exact" marks abbreviations that are also ordinary lower-case words (AIDS/aids, RAD/rad).
        synonyms.append(_Synonym(abbreviation, expansion, match == "exact"))
    return _SynonymTable(
        tuple(synonyms),
        _alternation([item.abbreviation for item in synonyms if not item.exact_case], re.IGNORECASE),
        _alternation([item.abbreviation for item in synonyms if item.exact_case], 0),
    )


def load_synonyms(*, exact_case: bool = True) -> dict[str, list[str]]:
    """Abbreviation -> its expansions, from the packaged code_synonyms.csv (exact_case=False: without the
    abbreviations that are also ordinary words, AIDS / aids, for matching text that has been lower-cased)."""
    synonyms: dict[str, list[str]] = {}
    for synonym in _synonym_table().synonyms:
        if synonym.exact_case and not exact_case:
            continue
        synonyms.setdefault(synonym.abbreviation, []).append(synonym.expansion)
    return synonyms


def expand_abbreviations(text: str) -> list[tuple[str, str]]:
    """(abbreviation, expansion) for each known abbreviation in text whose expansion the text lacks."""
    table = _synonym_table()
    found: set[str] = set()
    if table.any_case is not None:
        found.update(match.group(0).lower() for match in table.any_case.finditer(text))
    exact: set[str] = set()
    if table.exact_case is not None:
        exact.update(match.group(0) for match in table.exact_case.finditer(text))
    lowered = text.lower()
    return [
        (synonym.abbreviation, synonym.expansion)
        for synonym in table.synonyms
        if (synonym.abbreviation in exact if synonym.exact_case else synonym.abbreviation.lower() in found)
        and synonym.expansion.lower() not in lowered
    ]


# --------------------------------------------------------------------------------------------- fitting


@dataclass
class _Part:
    """One optional line of a code document: "label: item; item; ...", trimmed item by item."""

    label: str
    items: list[str]
    priority: int  # lower is dropped first
    joiner: str = "; "
    count_dropped: bool = False
    dropped: int = 0

    def render(self) -> str | None:
        if not self.items:
            return None
        # An item such as "underlying disease, such as:" introduces the ones after it.
        joined = "".join(
            item + ("" if index == len(self.items) - 1 else " " if item.endswith(":") else self.joiner)
            for index, item in enumerate(self.items)
        )
        more = f" (and {self.dropped} more)" if self.count_dropped and self.dropped else ""
        return f"{self.label}: {joined}{more}"


def _fit(lines: Sequence[str | _Part], counter: TokenCounter, max_tokens: int) -> str:
    """Render the lines, dropping optional items (lowest priority, last item first) until the text fits."""

    def render() -> str:
        rendered = (line if isinstance(line, str) else line.render() for line in lines)
        return "\n".join(line for line in rendered if line)

    text = render()
    parts = [line for line in lines if isinstance(line, _Part) and line.items]
    while counter.count(text) > max_tokens:
        trimmable = [part for part in parts if part.items]
        if not trimmable:
            # Even the required lines are too long (never seen in real code sets): keep their start.
            return counter.truncate(text, max_tokens)
        part = min(trimmable, key=lambda candidate: candidate.priority)
        part.items.pop()
        part.dropped += 1
        text = render()
    return text


def _resolve(counter: TokenCounter | None, max_tokens: int | None) -> tuple[TokenCounter, int]:
    counter = counter or default_token_counter()
    return counter, counter.budget() if max_tokens is None else max_tokens


def _texts(values: Sequence[str] | None) -> list[str]:
    return [value for value in (values or []) if value and value.strip()]


# --------------------------------------------------------------------------------------------- HCPCS documents


def hcpcs_document_text(
    row: Mapping[str, Any],
    category: HcpcsCategory,
    lcds: Sequence[tuple[str, str]],
    *,
    counter: TokenCounter | None = None,
    max_tokens: int | None = None,
) -> str:
    """Embeddable text of one HCPCS record: descriptions, category, expanded abbreviations, LCDs listing it."""
    counter, max_tokens = _resolve(counter, max_tokens)
    code = row["code"]
    long_description = (row.get("long_description") or "").strip()
    short_description = (row.get("short_description") or "").strip()
    noun = "HCPCS modifier" if row.get("kind") == "modifier" else "HCPCS"
    lines: list[str | _Part] = [f"{noun} {code}: {long_description or short_description}"]
    if row.get("termination_date"):
        lines.append(f"Terminated: {row['termination_date']}")
    described = f"{long_description}\n{short_description}"
    if short_description and short_description.lower() != long_description.lower():
        lines.append(_Part("Short description", [short_description], priority=3))
    lines.append(_Part("Category", [category.text], priority=4))
    abbreviations = [f"{abbreviation} = {expansion}" for abbreviation, expansion in expand_abbreviations(described)]
    lines.append(_Part("Abbreviations", abbreviations, priority=2))
    listed = list(dict.fromkeys(" ".join(part for part in (lcd_id, title) if part) for lcd_id, title in lcds))
    listed = [entry for entry in listed if entry]
    lines.append(_Part("Listed in LCDs", listed, priority=1, count_dropped=True))
    return _fit(lines, counter, max_tokens)


def hcpcs_embedding_text(row: Mapping[str, Any]) -> str:
    """What an HCPCS code's vector is computed from: its long and short descriptions, the item in its own words."""
    # The category path and the LCD titles of hcpcs_document_text are words a lay description of the item never
    # says; embedded with them, "standard manual wheelchair" found K0001 180th among the HCPCS vectors, without
    # them first (plain-words HCPCS questions, HCPCS vectors alone: dev MRR 0.49 -> 0.68, holdout 0.70 -> 0.67).
    long_description = (row.get("long_description") or "").strip()
    short_description = (row.get("short_description") or "").strip()
    if not long_description or short_description.lower() == long_description.lower():
        return long_description or short_description or row["code"]
    return f"{long_description}\n{short_description}" if short_description else long_description


# --------------------------------------------------------------------------------------------- ICD-10-CM documents

# Instructional notes in the order they are shown, with their trimming priority (lower is dropped first).
_ICD_NOTES: tuple[tuple[str, str, int], ...] = (
    ("inclusion_terms", "Inclusion terms", 9),
    ("includes", "Includes", 8),
    ("notes", "Notes", 4),
    ("code_first", "Code first", 7),
    ("use_additional_code", "Use additional code", 6),
    ("code_also", "Code also", 5),
    ("excludes1", "Excludes1", 2),
    ("excludes2", "Excludes2", 1),
)


def _billable_text(code_row: Mapping[str, Any]) -> str:
    if code_row.get("billable"):
        return "billable"
    if code_row.get("requires_seventh_character"):
        return "not billable without a 7th character"
    return "not billable: a header, code to a more specific child"


def icd10cm_document_text(
    code_row: Mapping[str, Any],
    chapter_title: str,
    section_title: str,
    parent_descriptions: Sequence[str],
    *,
    seventh_characters: Mapping[str, str] | None = None,
    counter: TokenCounter | None = None,
    max_tokens: int | None = None,
) -> str:
    """Embeddable text of one ICD-10-CM code: description, billability, parents, chapter, section, notes."""
    counter, max_tokens = _resolve(counter, max_tokens)
    description = code_row["description"]
    lines: list[str | _Part] = [f"ICD-10-CM {code_row['code']}: {description} ({_billable_text(code_row)})"]
    parents = _texts(parent_descriptions)
    if parents:
        lines.append(_Part("Hierarchy", [" > ".join([*parents, description])], priority=12))
    chapter = f"Chapter {code_row['chapter']}" if code_row.get("chapter") is not None else "Chapter"
    if chapter_title:
        lines.append(_Part(chapter, [chapter_title], priority=11))
    if section_title:
        lines.append(_Part("Section", [section_title], priority=10))
    for column, label, priority in _ICD_NOTES:
        lines.append(_Part(label, _texts(code_row.get(column)), priority=priority, count_dropped=True))
    characters = seventh_characters or code_row.get("seven_chr_def") or {}
    if characters:
        meanings = [f"{character} {meaning}" for character, meaning in characters.items()]
        lines.append(_Part("7th character", meanings, priority=3))
    return _fit(lines, counter, max_tokens)


def icd10cm_parent_descriptions(code: str, codes_by_code: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Descriptions of a code's ancestors, outermost first (E11.621 -> Type 2 diabetes mellitus, ...)."""
    descriptions: list[str] = []
    seen = {code}
    parent = codes_by_code[code].get("parent_code")
    while parent and parent in codes_by_code and parent not in seen:
        seen.add(parent)
        descriptions.append(codes_by_code[parent]["description"])
        parent = codes_by_code[parent].get("parent_code")
    return descriptions[::-1]
