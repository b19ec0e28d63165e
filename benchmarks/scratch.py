"""A throwaway, migrated database for a benchmark: on DATABASE_URL's server if set, else a temporary embedded one."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from medrag.core.db import get_engine, libpq_url, sqlalchemy_url
from medrag.core.embedded_pg import EmbeddedPostgres
from medrag.schema import migrate


@contextmanager
def scratch_database(prefix: str, *, server_url: str | None = None) -> Iterator[str]:
    """Yield the URL of a new database migrated to head; drop it (and any temporary server) afterwards."""
    folder = None
    server = None
    base_url = server_url or (sqlalchemy_url(os.environ["DATABASE_URL"]) if os.environ.get("DATABASE_URL") else None)
    if base_url is None:
        # PostgreSQL runs as an unprivileged user when we are root: the folder must be open to it.
        folder = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/tmp"))
        folder.chmod(0o755)
        server = EmbeddedPostgres(folder / "pgdata")
        base_url = server.start().url()
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(libpq_url(base_url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        get_engine(url=url).dispose()
        with psycopg.connect(libpq_url(base_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if server:
            server.stop()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
