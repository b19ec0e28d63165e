"""Bulk writes: rows as dicts in, PostgreSQL COPY out (psycopg 3), inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy import Connection

from medrag.core import progress

Columns = Sequence[tuple[str, str]]
# Rows between two advances of the load's progress tracker (an advance per row would cost more than the row).
PROGRESS_ROWS = 5000


def dbapi_connection(conn: Connection) -> Any:
    """The psycopg connection under a SQLAlchemy connection (same transaction)."""
    return conn.connection.driver_connection


def copy_rows(
    conn: Connection,
    table: str,
    columns: Columns,
    rows: Iterable[Mapping[str, Any]],
    *,
    constants: Mapping[str, Any] | None = None,
) -> int:
    """COPY dict rows into `table` (columns as (name, pg type)); `constants` are added to every row."""
    constants = dict(constants or {})
    names = [name for name in constants] + [name for name, _ in columns]
    json_columns = {name for name, pg_type in columns if pg_type == "jsonb"}
    # Binary COPY with declared types: psycopg then skips per-value type inference and text escaping.
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(name) for name in names)
    )
    fixed = list(constants.values())
    count = 0
    types = [_constant_type(value) for value in constants.values()] + [pg_type for _, pg_type in columns]
    with dbapi_connection(conn).cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            values = [
                Jsonb(row.get(name)) if name in json_columns and row.get(name) is not None else row.get(name)
                for name, _ in columns
            ]
            copy.write_row(fixed + values)
            count += 1
            if count % PROGRESS_ROWS == 0:
                progress.count(PROGRESS_ROWS)
    progress.count(count % PROGRESS_ROWS)
    return count


def _constant_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "text"


def delete_release_rows(conn: Connection, tables: Iterable[str], release_id: int) -> None:
    """Remove what an earlier, interrupted or forced load of this release left in `tables`."""
    cursor = dbapi_connection(conn).cursor()
    for table in tables:
        cursor.execute(sql.SQL("DELETE FROM {} WHERE release_id = %s").format(sql.Identifier(table)), (release_id,))
