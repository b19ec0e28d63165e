"""`medrag db ...` and `medrag sql`: the database lifecycle and a psql shell."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from medrag.codes.cache import WARM_CALLS, warm_code_cache
from medrag.core.config import Settings, load_settings
from medrag.core.db import database_url, embedded_server, get_engine, libpq_url
from medrag.core.embedded_pg import bin_dir
from medrag.core.errors import MedragError
from medrag.schema import migrate


@click.group("db")
def db_group() -> None:
    """Start, stop, migrate, back up and restore medrag's PostgreSQL database."""


def _refuse_with_external(action: str) -> None:
    if load_settings().database_url:
        raise MedragError(f"DATABASE_URL is set: medrag uses that server and does not {action} one")


@db_group.command("start")
@click.option("--port", type=int, default=None, help="TCP port on 127.0.0.1 (default: the last one, else a free one).")
def db_start(port: int | None) -> None:
    """Start the embedded PostgreSQL + pgvector server (a no-op when it already runs)."""
    _refuse_with_external("start")
    server = embedded_server(load_settings())
    already = server.status()
    status = server.start(port=port)
    verb = "already running" if already else "started"
    click.echo(f"embedded PostgreSQL {verb} on 127.0.0.1:{status.port} (data: {status.data_dir})")


@db_group.command("stop")
def db_stop() -> None:
    """Stop the embedded server."""
    _refuse_with_external("stop")
    stopped = embedded_server(load_settings()).stop()
    click.echo("embedded PostgreSQL stopped" if stopped else "embedded PostgreSQL was not running")


@db_group.command("status")
def db_status() -> None:
    """Say where the database is, whether it answers and which schema revision it has."""
    settings = load_settings()
    if settings.uses_embedded_db:
        status = embedded_server(settings).status()
        if status is None:
            click.echo(f"embedded PostgreSQL: stopped (data: {settings.pg_dir})")
            sys.exit(1)
        where = f"embedded PostgreSQL on 127.0.0.1:{status.port}, pid {status.pid} (data: {status.data_dir})"
        url = status.url()
    else:
        url = database_url(settings)
        where = f"external PostgreSQL at {libpq_url(url).split('@')[-1]}"
    revision = migrate.current_revision(url)
    head = migrate.head_revision()
    state = "up to date" if revision == head else f"needs `medrag db migrate` (head is {head})"
    click.echo(f"{where}\nschema revision: {revision or 'none'} ({state})")
    if revision == head:
        pending = migrate.pending_scripts(url)
        scripts = f"{', '.join(pending)} changed: needs `medrag db migrate`" if pending else "up to date"
        click.echo(f"analyst SQL scripts: {scripts}")
        click.echo(f"vectors: {_vector_line(settings, url)}")


def _vector_line(settings: Settings, url: str) -> str:
    """Chunks with a vector of the configured model and backend, and what the next refresh would embed."""
    from medrag.index.embedding import DocumentEmbedder, EmbeddingError, vector_status

    try:
        status = vector_status(get_engine(url=url), DocumentEmbedder.for_settings(settings))
    except EmbeddingError as error:
        return str(error)
    line = f"{status.current:,} of {status.chunks:,} chunks embedded by {status.model}"
    return line + (f"; {status.pending:,} pending: the next refresh embeds them" if status.pending else "")


@db_group.command("url")
def db_url() -> None:
    """Print the libpq URL of the database, for psql "$(medrag db url)"."""
    click.echo(libpq_url(database_url(start=False)))


@db_group.command("migrate")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to upgrade to.")
def db_migrate(revision: str) -> None:
    """Upgrade the schema, then the analyst SQL scripts that changed (starting the embedded server if needed)."""
    url = database_url()
    applied = migrate.upgrade(url, revision)
    click.echo(f"schema at revision {migrate.current_revision(url)}")
    if applied:
        click.echo(f"analyst SQL scripts applied: {', '.join(applied)}")


@db_group.command("warm")
@click.option("--most", type=click.IntRange(min=0), default=WARM_CALLS, show_default=True,
              help="Most recent calls to ask again.")
def db_warm(most: int) -> None:
    """Ask the code finder's recent calls again on the current data, so that their next ask after a refresh or a
    migration is a lookup (the refresh does this at its end)."""
    stats = warm_code_cache(get_engine(), most)
    click.echo(f"code cache warmed: {stats.asked} calls asked again ({stats.already_kept} already kept) "
               f"in {stats.seconds:.1f} s")


def _run_tool(tool: str, *args: str) -> None:
    """Run one of the embedded server's client programs (version 18: they read any older server too); its failure
    is one line."""
    import subprocess

    done = subprocess.run([str(bin_dir() / tool), *args], capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise MedragError(f"{tool} failed: {lines[-1] if lines else f'exit code {done.returncode}'}")


@db_group.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def db_backup(path: Path) -> None:
    """Write the whole database (tables, vectors, releases, query log) to PATH with pg_dump's custom format."""
    if path.exists():
        raise MedragError(f"{path} exists; name a new file")
    url = libpq_url(database_url())
    partial = path.with_name(path.name + ".partial")
    try:
        _run_tool("pg_dump", "--format=custom", "--no-owner", f"--file={partial}", url)
        partial.replace(path)  # a backup that stopped half way never has the final name
    finally:
        partial.unlink(missing_ok=True)
    click.echo(f"backed up to {path} ({path.stat().st_size:,} bytes)")


@db_group.command("restore")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def db_restore(path: Path) -> None:
    """Replace the database's contents with a backup of `medrag db backup` (one transaction: all of it or none)."""
    url = libpq_url(database_url())
    _run_tool("pg_restore", "--clean", "--if-exists", "--no-owner", "--single-transaction", "--exit-on-error",
              f"--dbname={url}", str(path))
    click.echo(f"restored {path}; schema revision {migrate.current_revision(database_url())}")


@click.command("sql", context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def sql_shell(psql_args: tuple[str, ...]) -> None:
    """Open psql (the one bundled with the embedded server) on medrag's database."""
    psql = str(bin_dir() / "psql")
    url = libpq_url(database_url())
    os.execv(psql, [psql, url, *psql_args])


COMMANDS = [db_group, sql_shell]
