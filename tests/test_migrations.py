"""Migrations on a real PostgreSQL: base -> head -> base -> head, every downgrade undoing its own revision, a
database at 0014 built by the old layout (revisions that re-ran sql/*.sql) upgraded in place, and the repeatable
SQL scripts applied only when they change."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import psycopg
import pytest
from alembic.script import ScriptDirectory
from conftest import _admin_execute, _with_database, fresh_database  # tests/ is on sys.path

from medrag.core.db import libpq_url
from medrag.core.embedded_pg import bin_dir
from medrag.schema import migrate

# A database at 0014 as the last commit whose revisions re-ran sql/*.sql (faed138) built it, as a schema dump.
OLD_LAYOUT_SCHEMA = Path(__file__).resolve().parent / "data" / "schema_0014_old_layout.sql"


def _query(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(libpq_url(url)) as conn:
        return conn.execute(sql).fetchall()


def _schema(url: str) -> list[str]:
    """pg_dump --schema-only as a sorted list of statements, without comments, settings or dump-session lines.

    A table's columns are compared as a set: a downgrade that gives a dropped column back can only add it at the end.
    """
    dump = subprocess.run([str(bin_dir() / "pg_dump"), "--schema-only", libpq_url(url)],
                          capture_output=True, text=True, check=True).stdout
    kept = [line for line in dump.splitlines()
            if not line.startswith(("--", "SET ", "SELECT pg_catalog.set_config", "\\restrict", "\\unrestrict"))]
    return sorted(_columns_unordered(statement.strip()) for statement in "\n".join(kept).split(";\n")
                  if statement.strip())


def _columns_unordered(statement: str) -> str:
    """A CREATE TABLE statement with its column lines sorted; any other statement as it is."""
    if not statement.startswith("CREATE TABLE") or not statement.endswith(")"):
        return statement
    head, _, body = statement.partition("(\n")
    columns = sorted(line.strip().rstrip(",") for line in body[:-1].splitlines() if line.strip())
    return head + "(\n" + ",\n".join(columns) + "\n)"


def _leftovers(url: str) -> list[tuple]:
    """Relations, functions and triggers of ours in the database (extensions' own objects and Alembic's table aside)."""
    return _query(url, """
        SELECT 'relation', relname FROM pg_class
        WHERE relnamespace = 'public'::regnamespace AND relname NOT IN ('alembic_version', 'alembic_version_pkc')
        UNION ALL
        SELECT 'function', p.oid::regprocedure::text FROM pg_proc p
        WHERE p.pronamespace = 'public'::regnamespace
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e')
        UNION ALL
        SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal""")


def _applied(url: str) -> dict[str, tuple]:
    return {name: (sha256, applied_at)
            for name, sha256, applied_at in _query(url, "SELECT name, sha256, applied_at FROM medrag_sql_script")}


def _assert_complete(url: str) -> None:
    """The analyst surface is there and works: search functions, views, the reader's rights."""
    assert migrate.current_revision(url) == migrate.head_revision()
    functions = {name for (name,) in _query(url, "SELECT proname FROM pg_proc WHERE proname LIKE 'medrag%'")}
    assert {"medrag_search", "medrag_search_text", "medrag_nearest", "medrag_refresh_terms"} <= functions
    views = {name for (name,) in _query(url, "SELECT viewname FROM pg_views WHERE schemaname = 'public'")}
    assert {"v_chunk", "v_hcpcs_current", "v_icd10cm_current", "v_ncd_current", "v_lcd_hcpcs"} <= views
    assert _query(url, "SELECT count(*) FROM medrag_search_text('oxygen therapy at home')") == [(0,)]
    assert _query(url, "SELECT has_function_privilege('medrag_reader', "
                       "'medrag_search(vector, text, integer, jsonb)', 'EXECUTE')") == [(True,)]
    assert set(_applied(url)) == set(migrate.REPEATABLE_SCRIPTS)


def test_base_head_base_head_leaves_a_complete_schema_then_nothing(empty_db_url: str) -> None:
    for _ in range(2):
        migrate.upgrade(empty_db_url)
        _assert_complete(empty_db_url)
        migrate.downgrade(empty_db_url, "base")
        assert migrate.current_revision(empty_db_url) is None
        assert _leftovers(empty_db_url) == []
    migrate.upgrade(empty_db_url)
    _assert_complete(empty_db_url)


def test_every_downgrade_undoes_its_own_revision(empty_db_url: str) -> None:
    """Step up from base one revision at a time, then down: each step down gives back the schema of the step up."""
    scripts = ScriptDirectory.from_config(migrate.alembic_config(empty_db_url))
    revisions = [script.revision for script in reversed(list(scripts.walk_revisions()))]
    schemas = {}
    for revision in revisions:
        migrate.upgrade(empty_db_url, revision)
        schemas[revision] = _schema(empty_db_url)
    for below, revision in reversed(list(pairwise(revisions))):
        migrate.downgrade(empty_db_url, below)
        assert _schema(empty_db_url) == schemas[below], f"the downgrade of {revision} left a different schema"
    migrate.downgrade(empty_db_url, "base")  # the extensions stay (0001): nothing else
    assert _leftovers(empty_db_url) == []


@pytest.fixture(scope="module")
def old_layout_0014(pg_server_url: str) -> Iterator[str]:
    """Name of a template database at 0014 as the old layout built it (tests/data/schema_0014_old_layout.sql)."""
    name = f"medrag_old_layout_{os.getpid()}"
    _admin_execute(pg_server_url, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
    # its grants name the reader role, which is cluster-wide and may not exist yet
    _admin_execute(pg_server_url, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'medrag_reader') "
                                  "THEN CREATE ROLE medrag_reader LOGIN NOINHERIT; END IF; END $$")
    subprocess.run([str(bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(OLD_LAYOUT_SCHEMA),
                    libpq_url(_with_database(pg_server_url, name))], check=True, capture_output=True, timeout=120)
    yield name
    _admin_execute(pg_server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def old_db_url(pg_server_url: str, old_layout_0014: str) -> Iterator[str]:
    """A copy of the old-layout 0014 database, private to one test."""
    yield from fresh_database(pg_server_url, old_layout_0014)


def test_a_0014_database_of_the_old_layout_upgrades_to_the_schema_of_a_fresh_one(old_db_url: str,
                                                                                 empty_db_url: str) -> None:
    assert migrate.current_revision(old_db_url) == "0014"
    assert migrate.upgrade(old_db_url) == migrate.REPEATABLE_SCRIPTS
    _assert_complete(old_db_url)
    migrate.upgrade(empty_db_url)
    assert _schema(old_db_url) == _schema(empty_db_url)


def test_a_0014_database_of_the_old_layout_downgrades_to_nothing(old_db_url: str) -> None:
    migrate.downgrade(old_db_url, "base")
    assert _leftovers(old_db_url) == []


def test_a_second_migrate_with_nothing_changed_runs_no_script(empty_db_url: str) -> None:
    assert migrate.upgrade(empty_db_url) == migrate.REPEATABLE_SCRIPTS
    applied = _applied(empty_db_url)
    assert migrate.upgrade(empty_db_url) == ()
    assert _applied(empty_db_url) == applied
    assert migrate.pending_scripts(empty_db_url) == ()


def test_a_changed_script_is_applied_with_every_script_after_it(empty_db_url: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    migrate.upgrade(empty_db_url)
    before = _applied(empty_db_url)
    changed = tmp_path / "sql"
    shutil.copytree(migrate.SQL_DIR, changed)
    view = "\nCREATE OR REPLACE VIEW v_release_labels AS SELECT label FROM release;\n"
    (changed / "views.sql").write_text((changed / "views.sql").read_text() + view)
    monkeypatch.setattr(migrate, "SQL_DIR", changed)

    assert migrate.pending_scripts(empty_db_url) == ("views.sql",)
    assert migrate.upgrade(empty_db_url) == migrate.REPEATABLE_SCRIPTS
    after = _applied(empty_db_url)
    assert after["views.sql"][0] == migrate.script_hash((changed / "views.sql").read_text())
    assert all(after[name][1] > before[name][1] for name in migrate.REPEATABLE_SCRIPTS)
    assert _query(empty_db_url, "SELECT count(*) FROM v_release_labels") == [(0,)]
    assert migrate.upgrade(empty_db_url) == ()
    # the scripts' views go with a downgrade, the new one too
    migrate.downgrade(empty_db_url, "base")
    assert _leftovers(empty_db_url) == []


def test_a_recorded_hash_that_differs_reapplies_the_scripts(empty_db_url: str) -> None:
    migrate.upgrade(empty_db_url)
    before = _applied(empty_db_url)
    with psycopg.connect(libpq_url(empty_db_url)) as conn:
        conn.execute("UPDATE medrag_sql_script SET sha256 = 'edited by hand' WHERE name = 'roles.sql'")
    assert migrate.pending_scripts(empty_db_url) == ("roles.sql",)
    assert migrate.upgrade(empty_db_url) == migrate.REPEATABLE_SCRIPTS
    after = _applied(empty_db_url)
    assert {name: sha for name, (sha, _) in after.items()} == {name: sha for name, (sha, _) in before.items()}
    assert all(after[name][1] > before[name][1] for name in migrate.REPEATABLE_SCRIPTS)


def test_the_scripts_replace_a_finder_of_an_older_argument_list(empty_db_url: str) -> None:
    """A database whose finder predates with_candidates keeps no five-argument finder beside the new one."""
    migrate.upgrade(empty_db_url)
    with psycopg.connect(libpq_url(empty_db_url)) as conn:
        conn.execute("CREATE FUNCTION medrag_find_codes(text, text[], text, integer, vector) RETURNS jsonb "
                     "LANGUAGE sql AS 'SELECT NULL::jsonb'")
        conn.execute("UPDATE medrag_sql_script SET sha256 = 'an older finder' WHERE name = 'finder.sql'")
    migrate.upgrade(empty_db_url)
    assert _query(empty_db_url, "SELECT oid::regprocedure::text FROM pg_proc WHERE proname = 'medrag_find_codes'") == [
        ("medrag_find_codes(text,text[],text,integer,vector,boolean)",)]


def test_0020_moves_each_vector_and_its_maker_to_chunk_vector_and_back(empty_db_url: str) -> None:
    """The vectors of a database at 0019 (in chunk) are in chunk_vector after 0020, and in chunk again after its
    downgrade, with the model that made each; a chunk without one gets no row."""
    migrate.upgrade(empty_db_url, "0019")
    with psycopg.connect(libpq_url(empty_db_url)) as conn:
        model = conn.execute("INSERT INTO embedding_model (name, digest, backend, dimension) "
                             "VALUES ('m', 'd', 'onnx', 384) RETURNING id").fetchone()[0]
        release = conn.execute("INSERT INTO release (source, label) VALUES ('mcd', 'r') RETURNING id").fetchone()[0]
        document = conn.execute("INSERT INTO document (release_id, source, key, title, content_hash) "
                                "VALUES (%s, 'lcd', 'L1', 't', 'h') RETURNING id", (release,)).fetchone()[0]
        for ordinal, (value, maker) in enumerate([(0.25, model), (0.5, None), (None, None)]):
            conn.execute("INSERT INTO chunk (document_id, ordinal, text, content_hash, embedding, embedding_model_id) "
                         "VALUES (%s, %s, 't', 'h', CASE WHEN %s::real IS NULL THEN NULL "
                         "ELSE array_fill(%s::real, ARRAY[384])::vector END, %s)",
                         (document, ordinal, value, value, maker))
    before = _query(empty_db_url, "SELECT ordinal, embedding::text, embedding_model_id FROM chunk ORDER BY ordinal")
    migrate.upgrade(empty_db_url)
    assert _query(empty_db_url, "SELECT c.ordinal, v.source, v.embedding::text, v.model_id FROM chunk_vector v "
                                "JOIN chunk c ON c.id = v.chunk_id ORDER BY 1") == [
        (0, "lcd", before[0][1], model), (1, "lcd", before[1][1], None)]
    assert _query(empty_db_url, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'chunk'::regclass "
                                "AND attname IN ('embedding', 'embedding_model_id')") == [(0,)]
    migrate.downgrade(empty_db_url, "0019")
    assert _query(empty_db_url, "SELECT ordinal, embedding::text, embedding_model_id FROM chunk "
                                "ORDER BY ordinal") == before
