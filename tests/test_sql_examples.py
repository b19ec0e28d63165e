"""Every analyst example in sql/examples runs on the real corpus and returns what its header promises."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from medrag.core.db import libpq_url

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "sql" / "examples").glob("*.sql"))

# Figures read off the real files (see tests/test_ingest.py for where each comes from).
EXPECTED_ROWS = {
    "02_icd10cm_codes_added_between_releases.sql": 3119,
    "05_ncds_terminated.sql": 13,
    "06_hcpcs_codes_per_category.sql": 17,
}


def expectations(path: Path) -> dict[str, list[str]]:
    """The `-- expect-<kind>: value` lines of an example's header."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("-- expect-"):
            kind, value = line.removeprefix("-- expect-").split(":", 1)
            found.setdefault(kind.strip(), []).append(value.strip())
    return found


def test_there_are_a_dozen_examples() -> None:
    assert len(EXAMPLES) >= 12


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_returns_what_it_promises(indexed_engine, indexed_settings, path: Path) -> None:
    with psycopg.connect(libpq_url(indexed_settings.database_url)) as conn:
        cursor = conn.execute(path.read_text())
        rows = cursor.fetchall()
    assert rows, f"{path.name} returned no rows"
    cells = {str(cell) for row in rows for cell in row}
    expected = expectations(path)
    for value in expected.get("contains", []):
        assert value in cells, f"{path.name}: {value!r} not in the result"
    for value in expected.get("first", []):
        assert value in {str(cell) for cell in rows[0]}, f"{path.name}: first row {rows[0]} lacks {value!r}"
    for value in expected.get("row-count", []):
        assert len(rows) == int(value)
    if path.name in EXPECTED_ROWS:
        assert len(rows) == EXPECTED_ROWS[path.name]
