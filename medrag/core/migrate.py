"""Run the Alembic migrations in `migrations/` against a database URL."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command, op
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

# Both ship inside the package (pyproject maps the top-level migrations/ and sql/ folders in), so an installed
# medrag migrates without a source checkout.
MIGRATIONS_DIR = Path(str(resources.files("medrag.migrations")))
SQL_DIR = Path(str(resources.files("medrag.sql")))


def run_sql_files(*names: str) -> None:
    """Run files of sql/ inside a migration: they (re)create the analyst SQL surface as it is today."""
    # today's files may read columns a later revision adds (chunk.source, 0009): bodies are checked when run
    op.execute("SET LOCAL check_function_bodies = off")
    for name in names:
        op.execute((SQL_DIR / name).read_text())


def alembic_config(url: str) -> Config:
    """An Alembic config for our migrations folder and this URL (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Upgrade the database to `revision` (head by default)."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    """Downgrade the database to `revision` (empty by default)."""
    command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    """The newest revision in the migrations folder."""
    return ScriptDirectory.from_config(alembic_config("postgresql://")).get_current_head()


def current_revision(url: str) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
