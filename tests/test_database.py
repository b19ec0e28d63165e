"""The schema on a real PostgreSQL + pgvector: a data fix, extensions, indexes, vectors, full text (migrations both
ways: test_migrations.py)."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from medrag.cli import main
from medrag.core.db import get_engine, libpq_url
from medrag.schema import migrate


def test_releases_with_documents_are_marked_as_built_by_the_first_format(empty_db_url: str) -> None:
    """Migration 0012: documents built before formats were recorded are format 1; a release without any stays NULL."""
    migrate.upgrade(empty_db_url, "0011")
    engine = get_engine(url=empty_db_url)
    with engine.begin() as conn:
        built, bare = (conn.execute(text("INSERT INTO release (source, label) VALUES (:s, 'X') RETURNING id"),
                                    {"s": source}).scalar_one() for source in ("hcpcs", "iom"))
        conn.execute(text("INSERT INTO document (release_id, source, key, title, content_hash) "
                          "VALUES (:r, 'hcpcs', 'E0601', 'CPAP device', 'h')"), {"r": built})
    migrate.upgrade(empty_db_url)
    with engine.connect() as conn:
        formats = dict(conn.execute(text("SELECT id, documents_format FROM release")).all())
    assert formats == {built: 1, bare: None}


def test_a_command_on_a_database_never_migrated_says_so_in_one_line(empty_db_url: str, monkeypatch) -> None:
    monkeypatch.setenv("DATABASE_URL", empty_db_url)
    outcome = CliRunner().invoke(main, ["codes", "breast cancer"])
    assert outcome.exit_code == 2, outcome.output
    assert outcome.stderr.strip().splitlines() == [
        'medrag: error: the database lacks medrag\'s schema (relation "medrag_usable_release" does not exist): '
        "run `medrag db migrate`"]


def test_extensions_are_installed_at_the_versions_we_need(db_url: str) -> None:
    with psycopg.connect(libpq_url(db_url)) as conn:
        versions = dict(conn.execute("SELECT extname, extversion FROM pg_extension").fetchall())
    assert tuple(int(p) for p in versions["vector"].split(".")[:2]) >= (0, 8)
    assert "pg_trgm" in versions and "unaccent" in versions


def test_chunk_indexes_are_hnsw_cosine_and_gin(db_url: str) -> None:
    with psycopg.connect(libpq_url(db_url)) as conn:
        indexes = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes "
                                    "WHERE tablename IN ('chunk', 'chunk_vector')").fetchall())
    # one graph per document source over the narrow vector table, each with the predicate medrag_nearest_in repeats
    for source in ("ncd", "lcd", "article", "iom", "hcpcs", "icd10cm"):
        definition = indexes[f"chunk_vector_{source}_hnsw"]
        assert "ON public.chunk_vector USING hnsw (embedding vector_cosine_ops)" in definition
        assert definition.endswith(f"WHERE (source = '{source}'::text)")
        assert f"chunk_embedding_{source}_hnsw" not in indexes
    # and one per search group over its kinds (migration 0034), the predicate medrag_nearest's group branches repeat
    for group, sources in (("code", "'hcpcs'::text, 'icd10cm'::text"),
                           ("policy", "'ncd'::text, 'lcd'::text, 'article'::text, 'iom'::text")):
        definition = indexes[f"chunk_vector_{group}_hnsw"]
        assert "ON public.chunk_vector USING hnsw (embedding vector_cosine_ops)" in definition
        assert definition.endswith(f"WHERE (source = ANY (ARRAY[{sources}]))")
    # the near-duplicate ICD-10-CM descriptions get the denser graph (migration 0010); their group's graph is sparser
    # and built with a longer candidate list (migration 0035)
    assert "m='24', ef_construction='400'" in indexes["chunk_vector_icd10cm_hnsw"]
    assert "m='12', ef_construction='800'" in indexes["chunk_vector_code_hnsw"]
    assert "USING gin (tsv)" in indexes["chunk_tsv_gin"]


def test_vectors_and_generated_full_text_round_trip(engine) -> None:
    with engine.begin() as conn:
        release_id = conn.execute(
            text("INSERT INTO release (source, label, status) VALUES ('ncd', 'test', 'loaded') RETURNING id")
        ).scalar_one()
        document_id = conn.execute(
            text(
                "INSERT INTO document (release_id, source, key, title, content_hash) "
                "VALUES (:r, 'ncd', '240.2', 'Home Use of Oxygen', 'h') RETURNING id"
            ),
            {"r": release_id},
        ).scalar_one()
        for ordinal, (words, axis) in enumerate([("oxygen therapy at home", 0), ("wheelchair seating", 1)]):
            vector = [0.0] * 384
            vector[axis] = 1.0
            conn.execute(
                text(
                    "WITH new AS (INSERT INTO chunk (document_id, ordinal, text, heading, content_hash) "
                    "VALUES (:d, :o, :t, 'NCD 240.2', :h) RETURNING id, source) "
                    "INSERT INTO chunk_vector (chunk_id, source, embedding) "
                    "SELECT id, source, CAST(:e AS vector) FROM new"
                ),
                {"d": document_id, "o": ordinal, "t": words, "e": str(vector), "h": f"c{ordinal}"},
            )
    query = [0.0] * 384
    query[1] = 0.9
    query[0] = 0.1
    with engine.connect() as conn:
        nearest = conn.execute(
            text("SELECT text FROM chunk JOIN chunk_vector v ON v.chunk_id = chunk.id "
                 "ORDER BY v.embedding <=> CAST(:q AS vector) LIMIT 1"), {"q": str(query)}
        ).scalar_one()
        matched = conn.execute(
            text("SELECT text FROM chunk WHERE tsv @@ websearch_to_tsquery('english', 'oxygen')")
        ).scalars().all()
        sources = conn.execute(text("SELECT DISTINCT source FROM chunk WHERE document_id = :d"),
                               {"d": document_id}).scalars().all()
    assert nearest == "wheelchair seating"
    assert matched == ["oxygen therapy at home"]
    assert sources == ["ncd"]  # written by the trigger: the insert did not name it


def test_only_one_current_release_per_source(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO release (source, label, is_current) VALUES ('hcpcs', 'a', true)"))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("INSERT INTO release (source, label, is_current) VALUES ('hcpcs', 'b', true)"))
