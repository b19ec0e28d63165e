"""Migration 0003 (the frozen MCD schema) against the table specs the loader uses, without a database."""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from medrag.sources.mcd.release import _SPECS, MCD_TABLES, NCD_COLUMNS, NCD_DOCUMENTS_TABLE, NCD_KEY, TableSpec

MIGRATION = Path(__file__).resolve().parent.parent / "migrations" / "versions" / "0003_mcd.py"

# Spec column types as PostgreSQL spells the SQLAlchemy types that 0003 uses.
SQL_TYPES = {
    "text": "TEXT",
    "integer": "INTEGER",
    "timestamp": "TIMESTAMP WITHOUT TIME ZONE",
    "boolean": "BOOLEAN",
    "date": "DATE",
}

# Columns that 0003 puts first in every table (and first in its primary key), with no spec counterpart.
EXTRA_COLUMNS: tuple[tuple[str, str], ...] = (("release_id", "integer"),)
EXTRA_REFERENCES: tuple[tuple[str, str, str], ...] = (("release_id", "release.id", "CASCADE"),)


@dataclasses.dataclass(frozen=True)
class Shape:
    """One table as both sides can state it: (name, SQL type) columns in order, key, foreign keys."""

    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    references: tuple[tuple[str, str, str], ...]


class _RecordingOp:
    """Stands in for alembic's ``op`` so that running upgrade() builds Table objects instead of DDL."""

    def __init__(self) -> None:
        self.metadata = sa.MetaData()

    def create_table(self, name: str, *items: sa.SchemaItem, **kwargs: object) -> None:
        """Build the table as alembic would, in a private MetaData."""
        sa.Table(name, self.metadata, *items, **kwargs)

    def create_index(self, *args: object, **kwargs: object) -> None:
        """Ignore indexes: the specs do not describe them."""


@cache
def migration_tables() -> dict[str, sa.Table]:
    """Every table that 0003's upgrade() creates, read by running it against a recording ``op``."""
    module_spec = importlib.util.spec_from_file_location("_migration_0003_mcd", MIGRATION)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    recorder = _RecordingOp()
    module.op = recorder
    module.upgrade()
    return dict(recorder.metadata.tables)


def _sql_type(column: sa.Column) -> str:
    """The column's PostgreSQL type, with NOT NULL when the column is declared so."""
    type_name = column.type.compile(dialect=postgresql.dialect())
    return type_name if column.nullable else f"{type_name} NOT NULL"


def shape_of_table(table: sa.Table) -> Shape:
    """What 0003 declares for one table."""
    return Shape(
        columns=tuple((column.name, _sql_type(column)) for column in table.columns),
        key=tuple(column.name for column in table.primary_key.columns),
        references=tuple(
            sorted((fk.parent.name, fk.target_fullname, fk.ondelete or "") for fk in table.foreign_keys)
        ),
    )


def shape_of_spec(columns: Iterable[tuple[str, str]], key: tuple[str, ...]) -> Shape:
    """What 0003 should declare for a spec's columns and key: the extra columns first, key columns NOT NULL."""
    full_key = (*(name for name, _ in EXTRA_COLUMNS), *key)
    every = (*EXTRA_COLUMNS, *columns)
    return Shape(
        columns=tuple(
            (name, SQL_TYPES[kind] + (" NOT NULL" if name in full_key else "")) for name, kind in every
        ),
        key=full_key,
        references=EXTRA_REFERENCES,
    )


def expected_shapes(specs: Iterable[TableSpec]) -> dict[str, Shape]:
    """The shape of every MCD table and of the NCD documents table, as release.py defines them."""
    shapes = {spec.table: shape_of_spec(spec.columns, spec.key) for spec in specs}
    shapes[NCD_DOCUMENTS_TABLE] = shape_of_spec(NCD_COLUMNS, NCD_KEY)
    return shapes


def _column_differences(table: str, migration: Shape, spec: Shape) -> list[str]:
    """Columns present on one side only, typed differently, or in another order, each naming table.column."""
    ours, theirs = dict(migration.columns), dict(spec.columns)
    found = [f"{table}.{name}: in 0003, not in the spec" for name in ours if name not in theirs]
    found += [f"{table}.{name}: in the spec, not in 0003" for name in theirs if name not in ours]
    found += [
        f"{table}.{name}: 0003 has {ours[name]}, the spec has {theirs[name]}"
        for name in ours
        if name in theirs and ours[name] != theirs[name]
    ]
    common_ours = [name for name in ours if name in theirs]
    common_theirs = [name for name in theirs if name in ours]
    for position, (mine, other) in enumerate(zip(common_ours, common_theirs, strict=True)):
        if mine != other:
            found.append(f"{table}.{mine}: column order differs, 0003 has {mine} where the spec has {other}"
                         f" (shared column {position + 1})")
            break
    return found


def _table_differences(table: str, migration: Shape, spec: Shape) -> list[str]:
    """Every way one table of 0003 differs from its spec."""
    found = _column_differences(table, migration, spec)
    if migration.key != spec.key:
        found.append(f"{table}: primary key is {migration.key} in 0003, {spec.key} in the spec")
    if migration.references != spec.references:
        found.append(f"{table}: foreign keys are {migration.references} in 0003, {spec.references} expected")
    return found


def schema_differences(migration: dict[str, sa.Table], specs: Iterable[TableSpec]) -> list[str]:
    """Human-readable differences between 0003's tables and the specs; empty when they agree."""
    expected = expected_shapes(specs)
    found = [f"{table}: created by 0003, not in the specs" for table in sorted(set(migration) - set(expected))]
    found += [f"{table}: in the specs, not created by 0003" for table in sorted(set(expected) - set(migration))]
    for table in sorted(set(migration) & set(expected)):
        found += _table_differences(table, shape_of_table(migration[table]), expected[table])
    return found


@pytest.mark.unit
def test_migration_0003_matches_mcd_specs() -> None:
    """0003 is a frozen copy of _SPECS: a spec change without a new migration would load into the wrong schema."""
    tables = migration_tables()
    assert set(tables) == set(MCD_TABLES) | {NCD_DOCUMENTS_TABLE}
    differences = schema_differences(tables, _SPECS)
    assert not differences, "0003 and release.py disagree:\n" + "\n".join(differences)


def _replace_spec(table: str, **changes: object) -> list[TableSpec]:
    """_SPECS with one table's spec changed."""
    return [dataclasses.replace(spec, **changes) if spec.table == table else spec for spec in _SPECS]


def _drop_column(table: str, name: str) -> list[TableSpec]:
    """_SPECS without one column of one table."""
    columns = tuple(column for column in MCD_TABLES[table].columns if column[0] != name)
    return _replace_spec(table, columns=columns)


def _retype_column(table: str, name: str, kind: str) -> list[TableSpec]:
    """_SPECS with one column of one table given another type."""
    columns = tuple((column, kind if column == name else old) for column, old in MCD_TABLES[table].columns)
    return _replace_spec(table, columns=columns)


def _swap_first_columns(table: str) -> list[TableSpec]:
    """_SPECS with the first two columns of one table swapped."""
    first, second, *rest = MCD_TABLES[table].columns
    return _replace_spec(table, columns=(second, first, *rest))


ALTERED_SPECS = {
    "dropped column": (
        lambda: _drop_column("mcd_article", "keywords"),
        ["mcd_article.keywords: in 0003, not in the spec"],
    ),
    "retyped column": (
        lambda: _retype_column("mcd_update_period", "begin_date", "date"),
        ["mcd_update_period.begin_date: 0003 has TIMESTAMP WITHOUT TIME ZONE, the spec has DATE"],
    ),
    "reordered columns": (
        lambda: _swap_first_columns("mcd_state_x_region"),
        ["mcd_state_x_region.state_id: column order differs, 0003 has state_id where the spec has region_id"
         " (shared column 2)"],
    ),
    "shorter key": (
        lambda: _replace_spec("mcd_article_future_retire", key=()),
        [
            "mcd_article_future_retire.article_id: 0003 has INTEGER NOT NULL, the spec has INTEGER",
            "mcd_article_future_retire: primary key is ('release_id', 'article_id') in 0003, ('release_id',) in the"
            " spec",
        ],
    ),
    "missing table": (
        lambda: [spec for spec in _SPECS if spec.table != "mcd_region_lookup"],
        ["mcd_region_lookup: created by 0003, not in the specs"],
    ),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", list(ALTERED_SPECS))
def test_altered_specs_are_reported(case: str) -> None:
    """The comparison catches each kind of drift, naming the table and column, and reports nothing else."""
    build, expected = ALTERED_SPECS[case]
    assert schema_differences(migration_tables(), build()) == expected
