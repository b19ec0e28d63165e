"""Shared pytest fixtures: the real CMS corpus and a real PostgreSQL + pgvector."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from medrag.core.db import get_engine, libpq_url, sqlalchemy_url
from medrag.core.embedded_pg import EmbeddedPostgres
from medrag.schema import migrate

REPO_ROOT = Path(__file__).resolve().parents[1]
CMS_DIR = Path(os.environ.get("MEDRAG_CMS_DIR", REPO_ROOT.parent / "shared" / "cms"))


@pytest.fixture(scope="session")
def cms_dir() -> Path:
    """The real CMS/CDC release files beside the checkout (never copied into the repo)."""
    if not (CMS_DIR / "README.md").exists():
        pytest.fail(f"real CMS corpus not found at {CMS_DIR}; set MEDRAG_CMS_DIR")
    return CMS_DIR


# -- a real PostgreSQL + pgvector -------------------------------------------------------------------------------


def _docker_engine_answers() -> bool:
    """True when a Docker engine answers (testcontainers can start a container)."""
    try:
        import docker

        docker.from_env().ping()
    except Exception:  # noqa: BLE001 - no engine, no socket, no permission: all mean "not here"
        return False
    return True


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """URL of a server database: DATABASE_URL if set; a pgvector/pgvector container with MEDRAG_TEST_DB=docker
    when a Docker engine answers; else an embedded server in a temp dir on 127.0.0.1."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield sqlalchemy_url(external)
        return
    if os.environ.get("MEDRAG_TEST_DB") == "docker" and _docker_engine_answers():
        from testcontainers.community.postgres import PostgresContainer

        with PostgresContainer("pgvector/pgvector:pg18", driver="psycopg") as container:
            yield sqlalchemy_url(container.get_connection_url())
        return
    if os.environ.get("MEDRAG_TEST_DB") == "docker":
        warnings.warn("MEDRAG_TEST_DB=docker but no Docker engine answers: using the embedded server", stacklevel=1)
    # mkdtemp makes a 0700 dir; PostgreSQL runs as an unprivileged user when we are root, so open it up.
    home = Path(tempfile.mkdtemp(prefix="medrag-test-", dir=os.environ.get("MEDRAG_TEST_TMP", "/tmp")))
    home.chmod(0o755)
    server = EmbeddedPostgres(home / "pgdata")
    status = server.start()
    try:
        yield status.url()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _admin_execute(server_url: str, *statements: str) -> None:
    with psycopg.connect(libpq_url(server_url), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.fixture(scope="session")
def migrated_template(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated to head, used as the template of every test database."""
    name = f"medrag_template_{os.getpid()}"
    _admin_execute(pg_server_url, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
    migrate.upgrade(_with_database(pg_server_url, name))
    get_engine(url=_with_database(pg_server_url, name)).dispose()
    yield name
    _admin_execute(pg_server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _with_database(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


def fresh_database(pg_server_url: str, template: str | None) -> Iterator[str]:
    """Create a uniquely named database (from the template, or empty), yield its URL, then drop it."""
    name = f"medrag_test_{uuid.uuid4().hex[:12]}"
    template_clause = f' TEMPLATE "{template}"' if template else ""
    _admin_execute(pg_server_url, f'CREATE DATABASE "{name}"{template_clause}')
    url = _with_database(pg_server_url, name)
    try:
        yield url
    finally:
        get_engine(url=url).dispose()
        _admin_execute(pg_server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def db_url(pg_server_url: str, migrated_template: str) -> Iterator[str]:
    """A fresh database migrated to head, private to one test module."""
    yield from fresh_database(pg_server_url, migrated_template)


@pytest.fixture
def empty_db_url(pg_server_url: str) -> Iterator[str]:
    """A fresh, empty (unmigrated) database private to one test."""
    yield from fresh_database(pg_server_url, None)


@pytest.fixture(scope="module")
def engine(db_url: str) -> Engine:
    """SQLAlchemy engine on the module's database."""
    return get_engine(url=db_url)


# -- a local HTTP mirror of the CMS/CDC download sites (tests/cms_mirror.py) --------------------------------------


@pytest.fixture(scope="session")
def cms_mirror(tmp_path_factory: pytest.TempPathFactory, cms_dir: Path) -> Iterator[object]:
    """A real HTTP server on 127.0.0.1 laid out like the CMS sites, serving archives built from cms_dir."""
    from cms_mirror import start_cms_mirror  # tests/ is on sys.path: rootdir conftest, no __init__.py

    mirror = start_cms_mirror(tmp_path_factory.mktemp("cms_mirror"), cms_dir)
    yield mirror
    mirror.stop()


# -- a database with the whole corpus loaded and indexed (documents + chunks) --------------------------------------


@pytest.fixture(scope="session")
def indexed_settings(pg_server_url: str, migrated_template: str, cms_mirror, tmp_path_factory) -> Iterator[object]:
    """Settings on a session database that `indexed_engine` fills from the local CMS mirror."""
    import dataclasses

    from medrag.core.config import load_settings, source_urls_for

    for url in fresh_database(pg_server_url, migrated_template):
        yield dataclasses.replace(
            load_settings(), database_url=url, home=tmp_path_factory.mktemp("indexed-home"),
            source_urls=source_urls_for(f"mirror:{cms_mirror.base_url}"),
        )


@pytest.fixture(scope="session")
def indexed_engine(indexed_settings) -> Engine:
    """All four sources loaded, documents built for every current release, change sets kept, NCD and IOM chunks
    embedded.

    LCD (2.3k chunks) and code documents (53k) are built but not embedded: CPU embedding of all of them would take
    most of CI's budget; the exact, full-text and trigram legs of the search still find them.
    """
    from medrag.changes.compute import update_changes
    from medrag.index.embedding import DocumentEmbedder, embed_pending
    from medrag.refresh import current_label
    from medrag.refresh import fetch_and_load as pipeline
    from medrag.refresh.documents import build_documents

    engine = get_engine(url=indexed_settings.database_url)
    for source, release in (("mcd", None), ("iom", None), ("hcpcs", "all"), ("icd10cm", "all")):
        for fetched in pipeline.fetch_source(indexed_settings, source, release=release):
            pipeline.load_fetched(engine, indexed_settings, fetched)
    for source in ("mcd", "iom", "hcpcs", "icd10cm"):
        build_documents(engine, source, current_label(engine, source))
        update_changes(engine, source)  # what each release changed, as the refresh's changes stage keeps it
    embed_pending(engine, DocumentEmbedder.for_settings(indexed_settings), sources=["ncd", "iom"])
    return engine


# -- the medrag command in-process on the indexed database --------------------------------------------------------


@pytest.fixture
def cli(indexed_settings, monkeypatch):
    """Run `medrag ...` in-process against the indexed database; returns (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from medrag.cli import main

    monkeypatch.setenv("DATABASE_URL", indexed_settings.database_url)
    monkeypatch.setenv("MEDRAG_HOME", str(indexed_settings.home))

    def run(*args: str) -> tuple[int, str, str]:
        outcome = CliRunner().invoke(main, list(args))
        if outcome.exception and not isinstance(outcome.exception, SystemExit):
            raise outcome.exception
        return outcome.exit_code, outcome.stdout, outcome.stderr

    return run


# -- what each test needs, as markers: `pytest -m unit` runs the tests that need neither database nor corpus -----------

CORPUS_FIXTURES = frozenset({"cms_dir", "cms_mirror", "indexed_settings", "indexed_engine"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test corpus (reads the real CMS files), database (a real PostgreSQL) or unit (neither)."""
    for item in items:
        needs = set(getattr(item, "fixturenames", ()))
        if needs & CORPUS_FIXTURES:
            item.add_marker(pytest.mark.corpus)
        if "pg_server_url" in needs:
            item.add_marker(pytest.mark.database)
        if not needs & CORPUS_FIXTURES and "pg_server_url" not in needs:
            item.add_marker(pytest.mark.unit)
