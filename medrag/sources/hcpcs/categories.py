"""Where a HCPCS Level II code sits: its letter section and sub-range, from the packaged hcpcs_categories.csv."""

from __future__ import annotations

import bisect
import csv
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from medrag.core.data import DataFileError
from medrag.core.identifiers import HCPCS

HCPCS_CATEGORIES_FILE = "hcpcs_categories.csv"
MODIFIER = "Modifier"
UNCLASSIFIED = "Unclassified HCPCS Level II code"



_HCPCS_LEVEL_II_CODE = re.compile(HCPCS)


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


def _data_text(name: str) -> str:
    return resources.files("medrag.sources.hcpcs").joinpath(name).read_text(encoding="utf-8")


def parse_hcpcs_categories(text: str, *, source: str = HCPCS_CATEGORIES_FILE) -> tuple[HcpcsCategory, ...]:
    """Category ranges from CSV text, checked: HCPCS Level II codes, ordered, non-overlapping, one title a letter."""
    ranges: list[HcpcsCategory] = []
    sections: dict[str, str] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        first, last = row.get("first_code") or "", row.get("last_code") or ""
        section, category = (row.get("section") or "").strip(), (row.get("category") or "").strip()
        where = f"{source} line {line}"
        if not (_HCPCS_LEVEL_II_CODE.fullmatch(first) and _HCPCS_LEVEL_II_CODE.fullmatch(last)):
            raise DataFileError(f"{where}: {first}-{last} is not a range of HCPCS Level II codes")
        if first[0] != last[0] or first > last:
            raise DataFileError(f"{where}: {first}-{last} is empty or spans two letters")
        if ranges and ranges[-1].last_code >= first:
            raise DataFileError(f"{where}: {first}-{last} overlaps or precedes {ranges[-1].last_code}")
        if not section or not category:
            raise DataFileError(f"{where}: a range needs a section and a category title")
        if sections.setdefault(first[0], section) != section:
            raise DataFileError(f"{where}: letter {first[0]} already has section {sections[first[0]]!r}")
        ranges.append(HcpcsCategory(section, category, first, last))
    if not ranges:
        raise DataFileError(f"{source}: no category ranges")
    return tuple(ranges)


@cache
def _category_table() -> _CategoryTable:
    ranges = parse_hcpcs_categories(_data_text(HCPCS_CATEGORIES_FILE))
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
