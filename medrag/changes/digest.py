"""Read change sets as a digest: which sets a question asks for, their changes, and what could not be compared."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from medrag.changes.compute import usable_releases
from medrag.core.errors import MedragError
from medrag.core.registry import SOURCE_NAMES, spec
from medrag.ingest.releases import release_sort_key

# The change sets kept, with the labels and periods of their releases.
_SETS = text("""
SELECT s.id, s.source, f.label AS from_label, t.label AS to_label, s.counts, s.notes, s.computed_at,
       lower(medrag_release_period(t.source, t.label)) AS to_starts
FROM release_change_set s
JOIN medrag_usable_release t ON t.id = s.to_release_id
LEFT JOIN release f ON f.id = s.from_release_id
WHERE s.source = :source AND (s.from_release_id IS NULL OR s.from_release_id IN (SELECT id FROM medrag_usable_release))
""")
# An export's own dated changes default to the quarter of its newest date: the export's "as of" quarter.
_EXPORT_QUARTER = text("SELECT date_trunc('quarter', max(effective_date))::date FROM release_change "
                       "WHERE change_set_id = :id")
_CHANGES = """
SELECT change_id, item_kind, item, change, field, old_value, new_value, effective_date, title, codes, detail
FROM v_release_changes {only}
WHERE change_set_id = :id
  AND (CAST(:since AS date) IS NULL OR coalesce(effective_date, CAST(:starts AS date)) >= CAST(:since AS date))
ORDER BY item_kind, change, item, field NULLS FIRST
"""
_ALL_CHANGES = text(_CHANGES.format(only=""))
# With a code list: only the changes it touches, joined (hashed) rather than tested against the list row by row.
_ONLY_CHANGES = text(_CHANGES.format(only="JOIN unnest(CAST(:only AS bigint[])) AS only_ids(id) ON only_ids.id = "
                                          "v_release_changes.change_id"))
_FOR_CODES = text("SELECT change_id, your_code, relation FROM medrag_changes_for_codes(:codes, :set_ids) "
                  "ORDER BY change_id, your_code")


@dataclass
class ChangeSetDigest:
    """One change set as read: the releases (from_label None: the export's own dates), since when, counts, notes and
    the changes themselves. A change without a date of its own counts from the day the newer release starts."""

    change_set_id: int
    source: str
    from_label: str | None
    to_label: str
    since: dt.date | None
    counts: dict[str, int]
    notes: list[str]
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scope(self) -> str:
        """'releases' (one release against another) or 'within' (the dates an export gives its own records)."""
        return "within" if self.from_label is None else "releases"


@dataclass
class Digest:
    """The change sets asked for, the sources that could not say what changed (and why), and the codes asked about."""

    sets: list[ChangeSetDigest] = field(default_factory=list)
    gaps: list[dict[str, str]] = field(default_factory=list)
    codes: list[str] | None = None

    def as_json(self) -> dict[str, Any]:
        """The digest as JSON-able data: what `medrag changes --json` prints and GET /changes returns."""
        sets = []
        for change_set in self.sets:
            item = asdict(change_set)
            item["scope"] = change_set.scope
            sets.append(item)
        return {"codes": self.codes, "sets": sets, "gaps": self.gaps}


def read_digest(conn: Connection, *, sources: list[str] | None = None, from_label: str | None = None,
                to_label: str | None = None, since: dt.date | None = None,
                codes: list[str] | None = None) -> Digest:
    """The digest asked for: by default the last refresh of each source (its current release against the one
    before, and an export's own changes in its newest quarter); --from/--to one pair; --since every change dated
    on or after a day. With codes, only the changes that touch them, each marked with the code and how."""
    if (from_label or to_label) and (since or not sources or len(sources) != 1):
        raise MedragError("--from/--to name one source's releases: give --source, and not --since")
    digest = Digest(codes=codes)
    chosen = []
    for source in sources or SOURCE_NAMES:
        spec(source)
        kept = conn.execute(_SETS, {"source": source}).mappings().all()
        labels = [label for _id, label in usable_releases(conn, source)]  # oldest first
        rows = _choose(kept, labels, from_label, to_label, since)
        if len(labels) < 2 and not (from_label or to_label):
            digest.gaps.append({"source": source, "message": _one_release(source, labels)})
        elif not any(row["from_label"] for row in rows):
            digest.gaps.append({"source": source, "message": f"{source}: no change set kept for the releases asked "
                                                            "(run `medrag changes` or a refresh to compute it)"})
        chosen += [(source, row) for row in rows]
    # with a code list, only the changes that touch it are read
    touched = None if codes is None else _touched(conn, codes, [row["id"] for _source, row in chosen])
    for source, row in chosen:
        window = since
        if window is None and row["from_label"] is None:
            window = conn.execute(_EXPORT_QUARTER, {"id": row["id"]}).scalar()
        parameters = {"id": row["id"], "since": window, "starts": row["to_starts"], "only": list(touched or [])}
        statement = _ALL_CHANGES if touched is None else _ONLY_CHANGES
        changes = [dict(change) for change in conn.execute(statement, parameters).mappings()]
        if touched is not None:
            changes = [{**change, "your_codes": touched[change["change_id"]]} for change in changes]
        digest.sets.append(ChangeSetDigest(row["id"], source, row["from_label"], row["to_label"], window,
                                           dict(row["counts"]), list(row["notes"]), changes))
    for change_set in digest.sets:
        if since is not None or codes is not None or change_set.from_label is None:
            change_set.counts = _counted(change_set.changes)
    return digest


def _one_release(source: str, labels: list[str]) -> str:
    if not labels:
        return f"{source}: no release loaded"
    return (f"{source}: one loaded release ({labels[0]}), so no release-to-release changes yet: the next refresh "
            "that loads another release will say what changed")


def _choose(kept: list[Any], labels: list[str], from_label: str | None, to_label: str | None,
            since: dt.date | None) -> list[Any]:
    """The kept change sets a question asks for (see read_digest)."""
    if from_label or to_label:
        return [row for row in kept if row["from_label"] == from_label and row["to_label"] == to_label]
    if since is not None:  # neighbours only: a pair asked for by name would repeat their changes
        neighbours = set(zip(labels, labels[1:], strict=False))
        return sorted((row for row in kept if row["from_label"] is None
                       or (row["from_label"], row["to_label"]) in neighbours),
                      key=lambda row: (row["from_label"] is None, release_sort_key(row["to_label"])))
    newest = labels[-1] if labels else None
    previous = labels[-2] if len(labels) > 1 else None
    return [row for row in kept if row["to_label"] == newest and row["from_label"] in (previous, None)]


def _touched(conn: Connection, codes: list[str], set_ids: list[int]) -> dict[int, list[dict[str, str]]]:
    """Each change of the sets that touches a listed code: its id -> [{code, relation}] (medrag_changes_for_codes)."""
    touched: dict[int, list[dict[str, str]]] = {}
    for row in conn.execute(_FOR_CODES, {"codes": codes, "set_ids": set_ids}):
        touched.setdefault(row.change_id, []).append({"code": row.your_code, "relation": row.relation})
    return touched


def _counted(changes: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(change["change"] for change in changes).items()))
