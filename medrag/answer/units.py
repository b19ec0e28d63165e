"""What an answer quotes: a document's text read back whole and cut into quotable units.

A unit is a sentence, or a list with the sentence that introduces it, or one list item with that sentence: never a
fragment ("not associated with pregnancy.") on its own. Each unit knows where it stands in its document (the
section, and the sub-heading inside it such as "C. Nationally Non-Covered Indications"), which is what lets the
answer prefer a determination's criteria to its background and never quote its review date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medrag.index.chunking import split_sentences
from medrag.sources.htmltext import LIST_INDENT

SENTENCE = "sentence"
LIST = "list"
ITEM = "item"
# Where a unit stands; the order is only for reading. The answer's scorer weighs each (medrag/data).
LISTING = "listing"  # a line-per-thing section: an LCD's contractors and codes
PLACES = ("covered", "noncovered", "other", "background", "reference", LISTING)
# A list longer than this is quoted item by item (each with its lead-in), not whole.
LIST_MAX_WORDS = 140
MAX_SENTENCE_WORDS = 80
MIN_UNIT_WORDS = 3

_BULLET = re.compile(r"^\s*(?:[-*\u2022\u25aa\u25cf]|\(?(?:[0-9]{1,2}|[a-zA-Z]|[ivx]{1,4})[.)])\s+")
# "B. Nationally Covered Indications", "Beneficiary Eligibility Criteria", "Group I:"; a lettered heading is not a
# list item ("a. Age 50 - 77 years;" is: lower case, or closing punctuation).
_HEADING = re.compile(r"^(?:[A-Z]\.\s+|[IVX]+\.\s+)?[A-Z][^.!?;]{0,80}:?$")
# An item that ends a clause ("Acute carbon monoxide intoxication,", "Age 40 - 75 years;") is a list item even alone.
_ENDS_CLAUSE = re.compile(r"[,;:.!?]$")
_CLOSED = re.compile(r"[.!?;:][\"'\u2019\u201d)\]]*$")
# Review dates, revision notes and "see also" pointers say nothing a coder asked.
_BOILERPLATE = re.compile(
    r"^\(?\s*(?:this\s+ncd\s+(?:was\s+)?last\s+reviewed|see\s+(?:§|section|the\s+medicare|also)|"
    r"transmittal|revision\s+history)", re.IGNORECASE)
# Sections and sub-headings -> place. The first pattern that matches the sub-heading, else the section, wins.
_PLACE_BY_SUBHEADING = (
    (re.compile(r"non-?covered|not\s+covered|noncoverage", re.IGNORECASE), "noncovered"),
    (re.compile(r"covered\s+indications|indications|eligib|criteria|requirements|coverage", re.IGNORECASE),
     "covered"),
    (re.compile(r"^(?:[A-Z]\.\s*)?(?:general|background|description)", re.IGNORECASE), "background"),
    (re.compile(r"^(?:[A-Z]\.\s*)?other\b", re.IGNORECASE), "other"),
)
_PLACE_BY_SECTION = (
    (re.compile(r"indications|limitations|coverage", re.IGNORECASE), "covered"),
    (re.compile(r"description|background", re.IGNORECASE), "background"),
    (re.compile(r"cross\s+reference|keywords|related", re.IGNORECASE), "reference"),
    (re.compile(r"^other", re.IGNORECASE), "other"),
    (re.compile(r"contractors|codes", re.IGNORECASE), "listing"),
)


@dataclass
class Unit:
    """One quotable piece of a document: its text, kind, place and position."""

    document_id: int
    position: int
    text: str
    kind: str
    place: str
    section: str = ""
    subheading: str = ""

    @property
    def words(self) -> int:
        """How many words it has."""
        return len(self.text.split())


def place_of(section: str, subheading: str) -> str:
    """Where a unit stands, from its sub-heading when that says, else from its section."""
    for pattern, place in _PLACE_BY_SUBHEADING:
        if subheading and pattern.search(subheading):
            return place
    for pattern, place in _PLACE_BY_SECTION:
        if pattern.search(section or ""):
            return place
    return "covered"


def is_boilerplate(text: str) -> bool:
    """Review dates, revision notes, cross-reference pointers: never quoted."""
    return bool(_BOILERPLATE.match(text.strip()))


def _is_heading(line: str) -> bool:
    words = line.split()
    return len(words) <= 10 and not line.startswith(("-", "*", "\u2022")) and bool(_HEADING.match(line))


class _Builder:
    """Cuts one section's text into units, keeping the sub-heading, the lead-in of each list and its nesting."""

    def __init__(self, document_id: int, section: str, start: int) -> None:
        self.document_id = document_id
        self.section = section
        self.position = start
        self.units: list[Unit] = []
        self.subheading = ""
        self.lead_in = ""
        self.items: list[tuple[int, str]] = []  # (depth, text) in reading order

    def add(self, text: str, kind: str) -> None:
        if len(text.split()) < MIN_UNIT_WORDS or is_boilerplate(text):
            return
        self.position += 1
        self.units.append(Unit(self.document_id, self.position, text, kind,
                               place_of(self.section, self.subheading), self.section, self.subheading))

    def close_list(self) -> None:
        if not self.items:
            self.lead_in = ""
            return
        # The sentence that introduces the list, else the heading it stands under; an item with neither is a
        # fragment and is quoted only inside its whole list.
        lead = self.lead_in or self.subheading
        if len(self.items) == 1 and _is_heading(self.items[0][1]) and not _ENDS_CLAUSE.search(self.items[0][1]):
            # "1. Somatic (Acquired) Cancer" before its paragraphs: a numbered heading, not a list
            self.subheading, self.items, self.lead_in = self.items[0][1], [], ""
            return
        top = min(depth for depth, _ in self.items)
        groups: list[tuple[str, list[tuple[int, str]]]] = []  # each top-level item with the items nested in it
        for depth, item in self.items:
            if depth == top or not groups:
                groups.append((item, []))
            else:
                groups[-1][1].append((depth - top, item))
        whole = (f"{lead}\n" if lead else "") + "\n".join(_rendered(item, children) for item, children in groups)
        if len(whole.split()) <= LIST_MAX_WORDS and (len(groups) > 1 or not lead):
            self.add(whole, LIST)
        for item, children in groups:
            criterion = _rendered(item, children)
            # A numbered criterion with its sub-items is one unit; a long one is quoted sub-item by sub-item,
            # each under the criterion that introduces it.
            if lead and len(criterion.split()) <= LIST_MAX_WORDS:
                self.add(f"{lead}\n{criterion}", ITEM)
            elif lead and not children:
                self.add(f"{lead}\n- {item}", ITEM)
            for depth, child in children:
                if depth == 1:
                    self.add(f"{item}\n- {child}", ITEM)
        self.items, self.lead_in = [], ""

    def paragraph(self, line: str) -> None:
        self.close_list()
        sentences = split_sentences(line)
        for index, sentence in enumerate(sentences):
            last = index == len(sentences) - 1
            if last and sentence.endswith(":"):
                self.lead_in = sentence  # introduces the list that follows; not quoted alone
                continue
            if len(sentence.split()) <= MAX_SENTENCE_WORDS and _CLOSED.search(sentence):
                self.add(sentence, SENTENCE)

    def line(self, raw: str) -> None:
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip(" "))
        bullet = _BULLET.match(line)
        if _is_heading(line):
            # "Group I:" right after "... the clinical criteria below:" keeps both as the list's lead-in
            pending = self.lead_in if not self.items else ""
            self.close_list()
            if line.endswith(":"):
                self.lead_in = f"{pending}\n{line}" if pending else line
            else:
                self.subheading = line
        elif bullet:
            self.items.append((indent // len(LIST_INDENT), line[bullet.end():].strip()))
        elif indent and self.items:
            depth, item = self.items[-1]  # an item's wrapped text lines up under it
            self.items[-1] = (depth, f"{item} {line}")
        else:
            self.paragraph(line)


def _rendered(item: str, children: list[tuple[int, str]]) -> str:
    """A list item as quoted, with the items nested in it indented under it."""
    return "\n".join([f"- {item}"] + [f"{LIST_INDENT * depth}- {child}" for depth, child in children])


def document_units(document_id: int, sections: list[tuple[str, str]]) -> list[Unit]:
    """The units of one document, given its (section, text) parts in reading order.

    Prose sections are cut into sentences and lists; a listing or reference section (an LCD's contractors and
    codes, an NCD's cross-references) is a line per thing, and each line is a unit.
    """
    units: list[Unit] = []
    for section, body in sections:
        if place_of(section, "") in ("listing", "reference"):
            units.extend(line_units(document_id, body, section, start=len(units)))
            continue
        builder = _Builder(document_id, section, len(units))
        for raw in body.split("\n"):
            if raw.strip():
                builder.line(raw.rstrip())
        builder.close_list()
        units.extend(builder.units)
    return units


def line_units(document_id: int, body: str, section: str = "", *, start: int = 0) -> list[Unit]:
    """Each line of a listing as a unit ("HCPCS E0601: ...", "Contractors: ...", "States: KY, OH."): a line says
    one thing."""
    units = []
    for line in (line.strip() for line in body.split("\n")):
        if len(line.split()) >= 2 and not is_boilerplate(line):
            units.append(Unit(document_id, start + len(units) + 1, line, SENTENCE,
                              place_of(section, "") if section else "listing", section))
    return units
