"""What every source's change finder shares: the rows it writes, sentences added and removed, revision entries.

A source's `changes.py` compares two loaded releases (and, for the MCD, dates an export's own changes) by writing
rows into release_change for a change set that medrag.changes.compute opened; it returns the notes a reader needs
(what could not be compared, where the release's own change list disagrees).
"""

from __future__ import annotations

import re
from typing import Protocol

from sqlalchemy import Connection, text

from medrag.sources.htmltext import html_to_text

# A sentence ends at . ! or ? before a space and a capital, digit, bracket or quote; list items end at line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])|\n+")
# One entry of an NCD's revision history: "12/2024 - The purpose of this Change Request ... (TN 12987) (CR13843)".
_REVISION_ENTRY = re.compile(r"^\s*(\d{1,2})/(\d{4})\s*[-–—:]\s*(.+)$")
# Where a change row lists no codes: a NCD or manual section names codes in its text (the search's patterns).
CODES_NAMED_IN = ("ARRAY(SELECT DISTINCT i.key FROM medrag_query_identifiers({text}) i "
                  "WHERE i.source IN ('hcpcs', 'icd10cm') ORDER BY 1)")


class ChangeFinder(Protocol):
    """A source's change finder: FORMAT and `between` (and, where an export dates its changes, `within`)."""

    FORMAT: int

    def between(self, conn: Connection, change_set_id: int, old_id: int, new_id: int) -> list[str]:
        """Write the changes from release old_id to new_id; return notes."""


def sentences(html_or_text: str | None) -> list[str]:
    """The sentences (and list items) of a narrative, in order, each on one line with its spaces folded."""
    plain = html_to_text(html_or_text or "")
    return [folded for part in _SENTENCE_END.split(plain) if (folded := " ".join(part.split()))]


def sentence_changes(old: str | None, new: str | None) -> tuple[list[str], list[str]]:
    """(sentences added, sentences removed) from old to new, each quoted as written, in document order."""
    old_sentences, new_sentences = sentences(old), sentences(new)
    old_set, new_set = set(old_sentences), set(new_sentences)
    added = [sentence for sentence in dict.fromkeys(new_sentences) if sentence not in old_set]
    removed = [sentence for sentence in dict.fromkeys(old_sentences) if sentence not in new_set]
    return added, removed


def revision_entries(history_html: str | None) -> list[tuple[str, str]]:
    """An NCD's revision history as (YYYY-MM, entry) pairs, newest first as CMS writes them."""
    entries = []
    for line in html_to_text(history_html or "").splitlines():
        match = _REVISION_ENTRY.match(line)
        if match:
            month, year, entry = match.groups()
            entries.append((f"{year}-{int(month):02d}", " ".join(f"{month}/{year} - {entry}".split())))
    return entries


def count_changes(conn: Connection, change_set_id: int) -> dict[str, int]:
    """Rows per change of one change set, e.g. {"added": 12, "redescribed": 40}."""
    rows = conn.execute(text("SELECT change, count(*) FROM release_change WHERE change_set_id = :id "
                             "GROUP BY change ORDER BY change"), {"id": change_set_id}).all()
    return {change: count for change, count in rows}
