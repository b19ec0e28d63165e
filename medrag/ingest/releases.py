"""Release bookkeeping: load a release in one transaction, keep the previous one current on failure, list, diff."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from medrag.core.errors import MedragError
from medrag.core.registry import specs
from medrag.ingest.copy import delete_release_rows
from medrag.ingest.fetch import FetchRecord


@dataclass
class LoadReport:
    """What a source loader wrote: rows per table, and members the release should have had but did not."""

    rows: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    notes: dict[str, object] = field(default_factory=dict)


class LoadError(MedragError):
    """A release could not be loaded; the previous release of the source is untouched and still current."""


@dataclass
class LoadOutcome:
    """What happened to one release: loaded, partial (members missing), unchanged or failed."""

    source: str
    label: str
    status: str
    release_id: int | None = None
    rows: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)  # the loader's remarks (LoadReport.notes)


def release_sort_key(label: str) -> tuple[int, str]:
    """Order labels of one source: '2019' < '2019Q1' < '2026Q1', 'FY2021' < 'FY2026'."""
    digits = "".join(ch for ch in label if ch.isdigit())[:4]
    return (int(digits) if digits else 0, label)


def loaded_release_with_same_files(conn: Connection, source: str, records: list[FetchRecord]) -> str | None:
    """Label of a loaded release of `source` whose raw files have exactly these URLs and hashes, if any."""
    wanted = sorted((record.url, record.sha256) for record in records)
    rows = conn.execute(
        text(
            "SELECT r.label, array_agg(f.url || ' ' || f.sha256 ORDER BY f.url, f.sha256) AS files "
            "FROM medrag_usable_release r JOIN raw_file f ON f.release_id = r.id "
            "WHERE r.source = :source GROUP BY r.label"
        ),
        {"source": source},
    ).all()
    wanted_files = [f"{url} {sha}" for url, sha in wanted]
    for label, files in rows:
        if list(files) == wanted_files:
            return label
    return None


def _upsert_release(conn: Connection, source: str, label: str) -> int:
    return conn.execute(
        text(
            "INSERT INTO release (source, label, status) VALUES (:source, :label, 'loading') "
            "ON CONFLICT (source, label) DO UPDATE SET status = 'loading' RETURNING id"
        ),
        {"source": source, "label": label},
    ).scalar_one()


def _write_raw_files(conn: Connection, release_id: int, records: list[FetchRecord]) -> None:
    conn.execute(text("DELETE FROM raw_file WHERE release_id = :id"), {"id": release_id})
    for record in records:
        conn.execute(
            text(
                "INSERT INTO raw_file (release_id, url, final_url, path, sha256, bytes, etag, last_modified, "
                "fetched_at) VALUES (:release_id, :url, :final_url, :path, :sha256, :bytes, :etag, "
                ":last_modified, :fetched_at)"
            ),
            {
                "release_id": release_id,
                "url": record.url,
                "final_url": record.final_url,
                "path": str(record.path),
                "sha256": record.sha256,
                "bytes": record.bytes,
                "etag": record.etag,
                "last_modified": record.last_modified,
                "fetched_at": record.fetched_at,
            },
        )


def promote_if_newest(conn: Connection, source: str, release_id: int, label: str) -> bool:
    """Make this release current unless a newer label of the source is already current."""
    current = conn.execute(
        text("SELECT id, label FROM release WHERE source = :source AND is_current"), {"source": source}
    ).first()
    if current and current.id != release_id and release_sort_key(current.label) > release_sort_key(label):
        return False
    conn.execute(text("UPDATE release SET is_current = false WHERE source = :source AND is_current"),
                 {"source": source})
    conn.execute(text("UPDATE release SET is_current = true WHERE id = :id"), {"id": release_id})
    return True


def load_release(
    engine: Engine,
    source: str,
    label: str,
    tables: tuple[str, ...],
    records: list[FetchRecord],
    loader: Callable[[Connection, int], LoadReport],
    manifest: dict[str, Any],
    *,
    promote: bool = True,
) -> LoadOutcome:
    """Load one release in a single transaction: all of it becomes visible (and current) or none of it does.

    promote=False leaves the current release as it is: the refresh makes the new one current later, together with its
    documents (medrag.index.documents.make_current), so code tables and documents switch in one commit.
    """
    started = time.perf_counter()
    try:
        with engine.begin() as conn:
            release_id = _upsert_release(conn, source, label)
            delete_release_rows(conn, tables, release_id)
            report = loader(conn, release_id)
            _write_raw_files(conn, release_id, records)
            status = "partial" if report.missing else "loaded"
            detail = {"missing_members": report.missing, "rows": report.rows, "notes": report.notes}
            conn.execute(
                text(
                    "UPDATE release SET status = :status, loaded_at = now(), fetched_at = :fetched_at, "
                    "manifest = CAST(:manifest AS jsonb), status_detail = CAST(:detail AS jsonb) WHERE id = :id"
                ),
                {
                    "status": status,
                    "fetched_at": max((r.fetched_at for r in records), default=dt.datetime.now(dt.UTC)),
                    "manifest": _json(manifest),
                    "detail": _json(detail),
                    "id": release_id,
                },
            )
            if promote:
                promote_if_newest(conn, source, release_id, label)
    except Exception as exc:
        reason = _one_line(exc)
        _record_failure(engine, source, label, reason)
        if isinstance(exc, MedragError):
            raise LoadError(f"{source} {label}: {reason}; the previous release is unchanged") from exc
        if isinstance(exc, SQLAlchemyError):
            raise LoadError(f"{source} {label}: database error: {reason}; the previous release is unchanged") from exc
        raise
    return LoadOutcome(source, label, status, release_id, report.rows, report.missing, time.perf_counter() - started,
                       notes=dict(report.notes))


def _record_failure(engine: Engine, source: str, label: str, reason: str) -> None:
    """Note the failure on the release row without touching a release that was loaded before."""
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO release (source, label, status, status_detail) "
                    "VALUES (:source, :label, 'failed', jsonb_build_object('error', CAST(:reason AS text))) "
                    "ON CONFLICT (source, label) DO UPDATE SET status_detail = release.status_detail "
                    "|| jsonb_build_object('last_error', CAST(:reason AS text)), "
                    "status = CASE WHEN release.id IN (SELECT id FROM medrag_usable_release) THEN release.status "
                    "ELSE 'failed' END"
                ),
                {"source": source, "label": label, "reason": reason},
            )
    except SQLAlchemyError:
        pass  # the database itself is gone; the load's own error is what the user needs to see


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str, sort_keys=True)


# -- reading -------------------------------------------------------------------------------------------------


def list_releases(conn: Connection, source: str | None = None) -> list[dict[str, Any]]:
    """Every release with its status, current flag, row counts and missing members, newest first per source."""
    rows = conn.execute(
        text(
            "SELECT r.source, r.label, r.status, r.is_current, r.loaded_at, r.status_detail, "
            "coalesce(sum(f.bytes), 0) AS bytes, count(f.id) AS files "
            "FROM release r LEFT JOIN raw_file f ON f.release_id = r.id "
            "WHERE CAST(:source AS text) IS NULL OR r.source = :source "
            "GROUP BY r.id ORDER BY r.source, r.label DESC"
        ),
        {"source": source},
    ).mappings()
    return [dict(row) for row in rows]


# Per code set: the table, key column and compared columns of `releases diff` (each source declares its own).
DIFF_SPECS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    source.name: (source.diff.table, source.diff.key, source.diff.compared) for source in specs() if source.diff
}


def newest_loaded_label(conn: Connection, source: str) -> str | None:
    """The label of the source's newest loaded (or partial) release: the one a refresh makes current."""
    labels = conn.execute(text("SELECT label FROM medrag_usable_release WHERE source = :s"),
                          {"s": source}).scalars().all()
    return max(labels, key=release_sort_key, default=None)


def release_id(conn: Connection, source: str, label: str) -> int:
    """The id of a loaded release, or MedragError naming what exists."""
    found = conn.execute(
        text("SELECT id FROM medrag_usable_release WHERE source = :s AND label = :l"),
        {"s": source, "l": label},
    ).scalar()
    if found is None:
        labels = conn.execute(text("SELECT label FROM release WHERE source = :s ORDER BY label"), {"s": source})
        raise MedragError(f"no loaded {source} release {label!r}; loaded: {', '.join(labels.scalars()) or 'none'}")
    return found


def diff_releases(conn: Connection, source: str, old: str, new: str) -> list[dict[str, Any]]:
    """Codes added, removed or changed (description / billable or the source's compared columns) from old to new."""
    if source not in DIFF_SPECS:
        raise MedragError(f"releases diff supports {', '.join(sorted(DIFF_SPECS))}, not {source!r}")
    table, key, compared = DIFF_SPECS[source]
    old_id, new_id = release_id(conn, source, old), release_id(conn, source, new)
    changed_any = " OR ".join(f"o.{c} IS DISTINCT FROM n.{c}" for c in compared)
    old_cols = ", ".join(f"o.{c} AS old_{c}" for c in compared)
    new_cols = ", ".join(f"n.{c} AS new_{c}" for c in compared)
    # Table and column names come from DIFF_SPECS above, never from the user.
    statement = text(
        f"SELECT coalesce(n.{key}, o.{key}) AS code, "
        f"CASE WHEN o.{key} IS NULL THEN 'added' WHEN n.{key} IS NULL THEN 'removed' ELSE 'changed' END AS change, "
        f"{old_cols}, {new_cols} "
        f"FROM (SELECT * FROM {table} WHERE release_id = :old) o "
        f"FULL JOIN (SELECT * FROM {table} WHERE release_id = :new) n ON o.{key} = n.{key} "
        f"WHERE o.{key} IS NULL OR n.{key} IS NULL OR {changed_any} ORDER BY 1"
    )
    return [dict(row) for row in conn.execute(statement, {"old": old_id, "new": new_id}).mappings()]
