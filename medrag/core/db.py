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


@lru_cache(maxsize=8)
def _engine_for(url: str) -> Engine:
    return create_engine(url, pool_pre_ping=True, future=True)


def get_engine(settings: Settings | None = None, *, url: str | None = None) -> Engine:
    """A pooled engine for medrag's database (one per URL per process)."""
    return _engine_for(sqlalchemy_url(url) if url else database_url(settings))
