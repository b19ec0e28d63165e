"""Build medrag's schema: versioned Alembic revisions, then the analyst SQL as repeatable scripts.

Two kinds of change, each applied its own way:

- Tables, columns, indexes, triggers and data fixes live in the revisions of `migrations/versions/`, each written
  out in full: a revision never reads a file that may have changed since it was written.
- The analyst SQL surface (views, search and code-scoring functions, the medrag_reader role's grants) lives in
  `sql/views.sql`, `sql/search.sql`, the code finder's `sql/finder*.sql` and `sql/roles.sql`, and in
  `generated.sql`, rendered from the Python rules SQL must share (medrag.schema.generated_sql): functions, views
  and the synonym table's rows (medrag_synonym, written whole from medrag/data/synonyms.csv). `upgrade` applies them
  after the revisions, once the database is at head, as Flyway applies repeatable scripts: in one transaction, only
  when one of them differs from what medrag_sql_script recorded (by SHA-256), and then all of them in order, since a
  function re-created by search.sql loses the rights roles.sql gave it.

`downgrade` first drops that surface (the scripts' functions and views, the reader's grants in this database) and
clears medrag_sql_script, then runs the revisions' downgrades, which undo their own DDL. So after a downgrade to a
revision below head the analyst SQL surface is absent until the next `upgrade` to head brings it back. Downgrade
through this module, never with Alembic alone: the revisions' tables cannot be dropped while functions that take
their rows stand.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from medrag.core.db import libpq_url

# Both ship inside the package (pyproject maps the top-level migrations/ and sql/ folders in), so an installed
# medrag migrates without a source checkout.
MIGRATIONS_DIR = Path(str(resources.files("medrag.migrations")))
SQL_DIR = Path(str(resources.files("medrag.sql")))

# views.sql first and roles.sql last: roles.sql grants on the views and makes search.sql's functions SECURITY DEFINER.
# generated.sql is rendered from the Python definitions it must agree with (medrag.schema.generated_sql).
# The code finder is one file per stage (sql/finder.sql says which), after the helpers and composition they share.
REPEATABLE_SCRIPTS = ("views.sql", "generated.sql", "search.sql", "finder.sql", "finder_analysis.sql",
                      "finder_candidates.sql", "finder_features.sql", "finder_score.sql", "finder_reflect.sql",
                      "finder_choice.sql", "finder_cache.sql", "check.sql", "changes.sql", "serve.sql", "roles.sql")
READER_ROLE = "medrag_reader"
_CREATED_FUNCTION = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)", re.IGNORECASE)
_CREATED_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(\w+)", re.IGNORECASE)


def alembic_config(url: str) -> Config:
    """An Alembic config for our migrations folder and this URL (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


# Two processes that start together (the compose worker and API) migrate one at a time.
MIGRATION_LOCK_KEY = 0x6D656472  # "medr"


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """Hold a session advisory lock while migrating, so concurrent upgrades of one database run one after another."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def upgrade(url: str, revision: str = "head") -> tuple[str, ...]:
    """Upgrade the database to `revision` (head by default); at head, apply the repeatable scripts if one changed.

    Returns the names of the scripts it ran (none when they were all applied as they are).
    """
    with migration_lock(url):
        command.upgrade(alembic_config(url), revision)
        if current_revision(url) != head_revision():
            return ()
        return apply_scripts(url)


def downgrade(url: str, revision: str = "base") -> None:
    """Drop the analyst SQL surface, then downgrade the database to `revision` (empty by default)."""
    drop_scripted_objects(url)
    command.downgrade(alembic_config(url), revision)
    if current_revision(url) == head_revision():  # a downgrade to head changes nothing: keep the surface there
        apply_scripts(url)


@functools.cache
def head_revision() -> str:
    """The newest revision in the migrations folder (read once: the folder ships with the installed package)."""
    return ScriptDirectory.from_config(alembic_config("postgresql://")).get_current_head()


def current_revision(url: str) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def script_texts() -> dict[str, str]:
    """The repeatable scripts as they are now, by name, in the order they run."""
    # the schema's builder reads the rules it renders from where they are defined (identifiers, settings, sources)
    from medrag.schema.generated_sql import GENERATED_SCRIPT, generated_script

    return {name: generated_script() if name == GENERATED_SCRIPT else (SQL_DIR / name).read_text()
            for name in REPEATABLE_SCRIPTS}


def script_hash(script: str) -> str:
    """The SHA-256 (hex) medrag_sql_script records for a script's text."""
    return hashlib.sha256(script.encode()).hexdigest()


def _recorded_hashes(conn: psycopg.Connection) -> dict[str, str]:
    if conn.execute("SELECT to_regclass('medrag_sql_script')").fetchone()[0] is None:
        return {}
    return dict(conn.execute("SELECT name, sha256 FROM medrag_sql_script").fetchall())


def _stale(scripts: dict[str, str], recorded: dict[str, str]) -> tuple[str, ...]:
    return tuple(name for name, script in scripts.items() if recorded.get(name) != script_hash(script))


def pending_scripts(url: str) -> tuple[str, ...]:
    """Names of the repeatable scripts whose text differs from what the database last applied."""
    with psycopg.connect(libpq_url(url)) as conn:
        return _stale(script_texts(), _recorded_hashes(conn))


def apply_scripts(url: str) -> tuple[str, ...]:
    """Run every repeatable script, in order, when any differs from its recorded hash; return the names run."""
    scripts = script_texts()
    with psycopg.connect(libpq_url(url)) as conn, conn.transaction():
        # one migrate at a time: a second waits here, then finds the hashes recorded and runs nothing
        conn.execute("LOCK TABLE medrag_sql_script IN EXCLUSIVE MODE")
        if not _stale(scripts, _recorded_hashes(conn)):
            return ()
        # a function may call one defined further down its file: bodies are checked when first run
        conn.execute("SET LOCAL check_function_bodies = off")
        for script in scripts.values():
            conn.execute(script)
        conn.execute("DELETE FROM medrag_sql_script")
        for name, script in scripts.items():
            conn.execute("INSERT INTO medrag_sql_script (name, sha256) VALUES (%s, %s)", (name, script_hash(script)))
    return tuple(scripts)


def drop_scripted_objects(url: str) -> None:
    """Drop what the repeatable scripts create in this database (functions, views, the reader's grants)."""
    scripts = "\n".join(script_texts().values())
    functions = list(dict.fromkeys(_CREATED_FUNCTION.findall(scripts)))
    views = list(dict.fromkeys(_CREATED_VIEW.findall(scripts)))
    with psycopg.connect(libpq_url(url)) as conn, conn.transaction():
        signatures = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.pronamespace = 'public'::regnamespace AND p.proname = ANY(%s)", (functions,)).fetchall()
        for (signature,) in signatures:
            conn.execute(f"DROP FUNCTION {signature}")
        for view in reversed(views):  # a view built on an earlier one goes first
            conn.execute(f'DROP VIEW IF EXISTS "{view}"')
        # the role is cluster-wide and may hold grants in other databases: only this database's go
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone():
            conn.execute(f"REVOKE ALL ON SCHEMA public FROM {READER_ROLE}")
            conn.execute(f"DROP OWNED BY {READER_ROLE}")
        if conn.execute("SELECT to_regclass('medrag_sql_script')").fetchone()[0] is not None:
            conn.execute("DELETE FROM medrag_sql_script")
