"""Claim lines as a coder writes them: one from the command line's options, many from a CSV or JSONL file."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from medrag.core.errors import MedragError

COLUMNS = ("line_id", "dos", "hcpcs", "modifiers", "dx", "state")
REQUIRED = ("dos",)


class ClaimFileError(MedragError):
    """A claim file that cannot be read at all: its header, its encoding, its format."""


def claim_line(*, dos: str | None, hcpcs: str | None = None, modifiers: tuple[str, ...] = (),
               dx: tuple[str, ...] = (), state: str | None = None, line_id: str | None = None) -> dict[str, Any]:
    """One claim line from its parts, as medrag_check_lines reads it."""
    return {"line_id": line_id, "dos": dos, "hcpcs": hcpcs, "modifiers": list(modifiers), "dx": list(dx),
            "state": state}


def _problem(number: int, problem: str) -> dict[str, Any]:
    # a line that is not a claim line still gets its findings: an error that says why, and no date to check by
    return {"line_id": str(number), "problem": problem}


def _csv_lines(path: Path, handle: Any) -> Iterator[dict[str, Any]]:
    reader = csv.DictReader(handle)
    header = [name.strip().lower() for name in reader.fieldnames or ()]
    missing = [name for name in REQUIRED if name not in header]
    unknown = [name for name in header if name not in COLUMNS]
    if missing or unknown:
        raise ClaimFileError(f"{path}: the header must name {', '.join(REQUIRED)} and only columns of "
                             f"{', '.join(COLUMNS)}; it has {', '.join(header) or 'none'}")
    reader.fieldnames = header
    for number, row in enumerate(reader, start=1):
        if None in row:  # more cells than the header names
            yield _problem(number, f"line {number} has {len(header) + len(row[None])} cells; the header names "
                                   f"{len(header)}")
            continue
        yield {name: (value or "").strip() or None for name, value in row.items()}


def _jsonl_lines(handle: Any) -> Iterator[dict[str, Any]]:
    number = 0
    for text in handle:
        if not text.strip():
            continue
        number += 1
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            yield _problem(number, f"line {number} is not JSON: {error.msg}")
            continue
        if not isinstance(value, dict):
            yield _problem(number, f"line {number} is not a JSON object")
            continue
        yield {name: value.get(name) for name in COLUMNS if name in value}


def read_claim_file(path: Path) -> Iterator[dict[str, Any]]:
    """The claim lines of a CSV (.csv) or JSONL (.jsonl, .json) file, streamed; a line that cannot be read is
    passed on with its problem, so it becomes an error finding and the rest of the file is still checked."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".json"):
        raise ClaimFileError(f"{path}: give a .csv or .jsonl file of claim lines")
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            yield from (_csv_lines(path, handle) if suffix == ".csv" else _jsonl_lines(handle))
    except UnicodeDecodeError as error:
        raise ClaimFileError(f"{path}: not UTF-8 text (byte {error.start}); save the file as UTF-8") from None
    except OSError as error:
        raise ClaimFileError(f"{path}: {error.strerror or error}") from None


def count_lines(path: Path) -> int | None:
    """How many claim lines a file holds (for the progress's ETA): its non-empty lines, less a CSV's header."""
    try:
        with path.open("rb") as handle:
            lines = sum(1 for raw in handle if raw.strip())
    except OSError:
        return None
    return max(lines - (1 if path.suffix.lower() == ".csv" else 0), 0)
