"""Compute change sets: each loaded release against the one before it, and an export's own dated changes.

A change set is computed once and kept; it is computed again when its source's change finder (its FORMAT) changed,
when either release was loaded again since, or when forced. Each is written in one transaction, so a reader sees
the old set or the new one, never half.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, text

from medrag.core.errors import MedragError
from medrag.ingest.releases import release_id, release_sort_key
from medrag.sources.changes import count_changes
from medrag.sources.handlers import change_finder


@dataclass
class ChangeSetOutcome:
    """One change set: which releases, rows per change, notes, and whether this call computed it."""

    source: str
    from_label: str | None
    to_label: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    computed: bool = False
    seconds: float = 0.0


def usable_releases(conn: Connection, source: str) -> list[tuple[int, str]]:
    """(id, label) of the source's loaded releases, oldest first."""
    rows = conn.execute(text("SELECT id, label FROM medrag_usable_release WHERE source = :s"), {"s": source}).all()
    return sorted(((row.id, row.label) for row in rows), key=lambda row: release_sort_key(row[1]))


def wanted_pairs(conn: Connection, source: str) -> list[tuple[tuple[int, str] | None, tuple[int, str]]]:
    """Each loaded release beside the one before it, and (None, release) for each export that dates its changes."""
    releases = usable_releases(conn, source)
    pairs: list[tuple[tuple[int, str] | None, tuple[int, str]]] = list(zip(releases, releases[1:], strict=False))
    if hasattr(change_finder(source), "within"):
        pairs += [(None, release) for release in releases]
    return pairs


def update_changes(engine: Engine, source: str, *, force: bool = False) -> list[ChangeSetOutcome]:
    """Compute the source's missing or outdated change sets (all of them when forced); return every wanted set."""
    with engine.connect() as conn:
        pairs = wanted_pairs(conn, source)
    outcomes = [change_set(engine, source, old, new, force=force) for old, new in pairs]
    if any(outcome.computed for outcome in outcomes):
        # fresh statistics, so a code list is matched by hashing, not probed row by row (milliseconds)
        with engine.begin() as conn:
            conn.execute(text("ANALYZE release_change"))
    return outcomes


def change_set_between(engine: Engine, source: str, from_label: str | None, to_label: str) -> ChangeSetOutcome:
    """The change set of two named releases (any two, not only neighbours), computed if it is not kept yet."""
    with engine.connect() as conn:
        old = None if from_label is None else (release_id(conn, source, from_label), from_label)
        new = (release_id(conn, source, to_label), to_label)
    if old is not None and release_sort_key(from_label or "") >= release_sort_key(to_label):
        raise MedragError(f"--from {from_label} is not older than --to {to_label}")
    return change_set(engine, source, old, new)


def change_set(engine: Engine, source: str, old: tuple[int, str] | None, new: tuple[int, str], *,
               force: bool = False) -> ChangeSetOutcome:
    """The kept change set of (old, new), computed first when missing, outdated or forced."""
    finder = change_finder(source)
    old_id = None if old is None else old[0]
    with engine.connect() as conn:
        # a release loaded again since the set was computed makes it stale
        kept = conn.execute(text(
            "SELECT s.changes_format, s.counts, s.notes, "
            "s.computed_at < greatest(f.loaded_at, t.loaded_at) AS stale FROM release_change_set s "
            "JOIN release t ON t.id = s.to_release_id LEFT JOIN release f ON f.id = s.from_release_id "
            "WHERE s.source = :s AND s.from_release_id IS NOT DISTINCT FROM :old AND s.to_release_id = :new"),
            {"s": source, "old": old_id, "new": new[0]}).first()
    outcome = ChangeSetOutcome(source, None if old is None else old[1], new[1])
    if kept is not None and kept.changes_format == finder.FORMAT and not kept.stale and not force:
        outcome.counts, outcome.notes = dict(kept.counts), list(kept.notes)
        return outcome
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM release_change_set WHERE source = :s "
                          "AND from_release_id IS NOT DISTINCT FROM :old AND to_release_id = :new"),
                     {"s": source, "old": old_id, "new": new[0]})
        set_id = conn.execute(text(
            "INSERT INTO release_change_set (source, from_release_id, to_release_id, changes_format) "
            "VALUES (:s, :old, :new, :format) RETURNING id"),
            {"s": source, "old": old_id, "new": new[0], "format": finder.FORMAT}).scalar_one()
        notes = finder.within(conn, set_id, new[0]) if old is None else finder.between(conn, set_id, old_id, new[0])
        outcome.counts, outcome.notes = count_changes(conn, set_id), notes
        outcome.seconds, outcome.computed = time.perf_counter() - started, True
        conn.execute(text("UPDATE release_change_set SET counts = CAST(:counts AS jsonb), "
                          "notes = CAST(:notes AS jsonb), seconds = :seconds, computed_at = now() WHERE id = :id"),
                     {"counts": json.dumps(outcome.counts), "notes": json.dumps(notes),
                      "seconds": outcome.seconds, "id": set_id})
    return outcome
