"""Database URL resolution and engines: DATABASE_URL when given, else the embedded server."""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url

from medrag.core.config import Settings, load_settings
from medrag.core.embedded_pg import EmbeddedPostgres
from medrag.core.errors import MedragError


class DatabaseUnavailable(MedragError):
    """No database to talk to (the embedded one is stopped and we were told not to start it)."""


def embedded_server(settings: Settings) -> EmbeddedPostgres:
    """The embedded server for this MEDRAG_HOME."""
    return EmbeddedPostgres(settings.pg_dir)


def sqlalchemy_url(url: str) -> str:
    """Normalise postgres:// and postgresql:// URLs to the psycopg 3 driver."""
    parsed = make_url(url)
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The same URL without the SQLAlchemy driver suffix, for psql and psycopg.connect."""
    parsed = make_url(sqlalchemy_url(url)).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def database_url(settings: Settings | None = None, *, start: bool = True) -> str:
    """SQLAlchemy URL of medrag's database; starts the embedded server when needed and allowed."""
    settings = settings or load_settings()
    if settings.database_url:
        return sqlalchemy_url(settings.database_url)
    server = embedded_server(settings)
    status = server.status()
    if status is None:
        if not start:
            raise DatabaseUnavailable("the embedded database is not running; run `medrag db start`")
        status = server.start()
    return status.url()


# Connections an engine keeps open. A server's request threads and the code finder's lookups (up to 8 at once) share
# one engine, and a connection opened afresh costs its first search about 35 ms more than a warm one (a new backend,
# its catalog and plan caches empty: 53 against 18 ms). SQLAlchemy's default keeps 5 and closes the rest on return,
# so under load every /codes request reopened connections: `medrag serve` with one client, /search p50 / p95 38 / 66
# -> 30 / 48 ms and /codes p50 72 -> 56 ms; 8 coders pausing 2 s between requests, /search p95 148 / 105 -> 72 / 70
# ms (16 kept measured the same). Ten per engine stays well under PostgreSQL's default 100 connections.
POOL_SIZE = 10
POOL_OVERFLOW = 20


@lru_cache(maxsize=8)
def _engine_for(url: str) -> Engine:
    return create_engine(url, pool_pre_ping=True, future=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)


def get_engine(settings: Settings | None = None, *, url: str | None = None) -> Engine:
    """A pooled engine for medrag's database (one per URL per process)."""
    return _engine_for(sqlalchemy_url(url) if url else database_url(settings))


def read_engine(settings: Settings | None = None) -> Engine:
    """The engine searches, code lookups and answers read through: DATABASE_READ_URL's replica when set, else
    medrag's database. Whatever writes (refresh, migrations, the query log, the rate limit) uses get_engine."""
    settings = settings or load_settings()
    return get_engine(url=settings.database_read_url) if settings.database_read_url else get_engine(settings)
