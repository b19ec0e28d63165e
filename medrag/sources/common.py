"""What every source module provides to the refresh pipeline: release candidates and a loader."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sqlalchemy import Connection, text

from medrag.ingest.releases import LoadReport

# Fetches an HTML page (with the pipeline's retries, timeouts and size cap) and returns its text.
GetPage = Callable[[str], str]


@dataclass(frozen=True)
class RemoteFile:
    """A file to download for a release, with the link text it was found under."""

    url: str
    text: str = ""


@dataclass
class ReleaseCandidate:
    """A release found on a source's pages: its label (None: decided from the download) and its files."""

    label: str | None
    files: list[RemoteFile]


class Source(Protocol):
    """A CMS source: how releases are discovered, which tables hold them, how files become rows."""

    name: str
    tables: tuple[str, ...]

    def discover(self, page_url: str, get_page: GetPage) -> list[ReleaseCandidate]:
        """Release candidates on the source's pages, newest first."""
        ...

    def load(self, conn: Connection, release_id: int, files: list[Path], workdir: Path) -> LoadReport:
        """Parse the downloaded files and COPY their rows (all tagged with release_id) inside `conn`'s transaction."""
        ...


def write_code_lookups(conn: Connection, release_id: int) -> None:
    """Rewrite what the code finder reads of a code release: its description words (medrag_code_word), which
    spelling is corrected to, each code's stemmed wordings (medrag_code_detail), which candidates are scored by, and
    the negations its wording states (icd10cm_stated_negation), which a term's "not ..." is read against."""
    conn.execute(text("SELECT medrag_refresh_code_words(:r), medrag_refresh_code_details(:r), "
                      "medrag_write_stated_negations(:r)"), {"r": release_id})


def quarter_label(day: dt.date) -> str:
    """'2026Q1' for any date in January-March 2026, and so on."""
    return f"{day.year}Q{(day.month - 1) // 3 + 1}"
