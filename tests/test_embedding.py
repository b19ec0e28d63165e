"""The embedding stage on a real PostgreSQL + pgvector, with real NCD text and the real model."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from sqlalchemy import Engine, text

from medrag.core.config import load_settings
from medrag.core.db import get_engine, libpq_url
from medrag.core.progress import LineSink, reporting
from medrag.index.embedding import (
    DocumentEmbedder,
    EmbeddingError,
    EmbedStats,
    PendingText,
    embed_pending,
    write_vectors,
)
from medrag.index.onnx_model import BACKEND_ONNX, BACKEND_TORCH
from medrag.sources.mcd.release import ncd_documents, read_mcd_csv

NCD_TRKG = Path("mcd/ncd/ncd_csv/ncd_trkg.csv")
CHUNK_COUNT = 50


def _content_hash(heading: str | None, body: str) -> str:
    return hashlib.sha256(_embedded_text(heading, body).encode()).hexdigest()


def _embedded_text(heading: str | None, body: str) -> str:
    """What the stage must embed: the heading on its own line, then the text (just the text without one)."""
    return f"{heading}\n{body}" if heading is not None else body


@pytest.fixture(scope="module")
def ncd_passages(cms_dir: Path) -> list[tuple[str | None, str]]:
    """(heading, text) pairs: paragraphs of real NCD narratives, every fifth one without a heading."""
    passages: list[tuple[str | None, str]] = []
    for document in ncd_documents(read_mcd_csv(cms_dir / NCD_TRKG)):
        for paragraph in (document["indications_limitations"] or "").split("\n\n"):
            if 80 <= len(paragraph) <= 800 and len(passages) < CHUNK_COUNT:
                heading = None if len(passages) % 5 == 4 else document["title"]
                passages.append((heading, paragraph))
    assert len(passages) == CHUNK_COUNT
    return passages


@pytest.fixture(scope="module")
def embedder() -> DocumentEmbedder:
    """The real all-MiniLM-L6-v2 on torch (float32 on the CPU), the backend held to sentence-transformers here."""
    return DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_TORCH, device="cpu")


@pytest.fixture(scope="module")
def sentence_transformer() -> Any:
    """The model as sentence-transformers loads it: the reference every backend is held to."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(load_settings().embedding_model, device="cpu")


def _reference_vectors(model: Any, texts: list[str]) -> np.ndarray:
    """SentenceTransformer.encode called directly: none of DocumentEmbedder's ordering or the database involved."""
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


@pytest.fixture(scope="module")
def reference_vectors(sentence_transformer: Any, ncd_passages: list[tuple[str | None, str]]) -> np.ndarray:
    """The model's vectors for the 50 embedded texts, in passage order."""
    return _reference_vectors(sentence_transformer, [_embedded_text(heading, body) for heading, body in ncd_passages])


def _new_document(engine: Engine, label: str) -> int:
    with engine.begin() as conn:
        release_id = conn.execute(
            text("INSERT INTO release (source, label) VALUES ('mcd', :label) RETURNING id"), {"label": label}
        ).scalar_one()
        return conn.execute(
            text(
                "INSERT INTO document (release_id, source, key, title, content_hash) "
                "VALUES (:release_id, 'ncd', :key, 'NCD passages', :key) RETURNING id"
            ),
            {"release_id": release_id, "key": f"passages-{label}"},
        ).scalar_one()


def _insert_chunks(engine: Engine, document_id: int, passages: list[tuple[str | None, str]]) -> list[int]:
    with engine.begin() as conn:
        return [
            conn.execute(
                text(
                    "INSERT INTO chunk (document_id, ordinal, heading, text, content_hash) "
                    "VALUES (:document_id, :ordinal, :heading, :text, :content_hash) RETURNING id"
                ),
                {
                    "document_id": document_id,
                    "ordinal": ordinal,
                    "heading": heading,
                    "text": body,
                    "content_hash": _content_hash(heading, body),
                },
            ).scalar_one()
            for ordinal, (heading, body) in enumerate(passages)
        ]


def _vectors(engine: Engine, chunk_ids: list[int]) -> list[np.ndarray | None]:
    with engine.connect() as conn:
        query = text("SELECT c.id, v.embedding::real[] FROM chunk c LEFT JOIN chunk_vector v ON v.chunk_id = c.id "
                     "WHERE c.id = ANY(:ids)")
        rows = dict(conn.execute(query, {"ids": chunk_ids}).all())
    return [None if rows[chunk_id] is None else np.asarray(rows[chunk_id], dtype=np.float32) for chunk_id in chunk_ids]


@pytest.fixture(scope="module")
def first_release(
    engine: Engine, ncd_passages: list[tuple[str | None, str]], embedder: DocumentEmbedder
) -> tuple[list[int], EmbedStats]:
    """The 50 NCD chunks of a first release, and the stats of the run that embedded them."""
    chunk_ids = _insert_chunks(engine, _new_document(engine, "2025Q1"), ncd_passages)
    return chunk_ids, embed_pending(engine, embedder, batch_size=16)


def test_first_run_embeds_every_chunk_with_the_models_vectors(
    engine: Engine, reference_vectors: np.ndarray, first_release: tuple[list[int], EmbedStats]
) -> None:
    chunk_ids, stats = first_release
    assert (stats.reused, stats.embedded) == (0, CHUNK_COUNT)
    assert stats.seconds_encode > 0 and stats.seconds_write > 0 and stats.chunks_per_second > 0
    assert stats.seconds_starved > 0  # the first window is read and tokenised before the model has anything to do
    for vector, expected in zip(_vectors(engine, chunk_ids), reference_vectors, strict=True):
        assert vector is not None
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
        np.testing.assert_allclose(vector, expected, atol=1e-5)


def test_encode_keeps_the_callers_order(
    embedder: DocumentEmbedder, ncd_passages: list[tuple[str | None, str]], reference_vectors: np.ndarray
) -> None:
    # Mixed lengths in an order unlike both length orders, so a missed restore shows.
    picks = [9, 2, 30, 0, 41, 17]
    vectors = embedder.encode([_embedded_text(*ncd_passages[index]) for index in picks])
    assert vectors.dtype == np.float32 and vectors.shape == (len(picks), 384)
    np.testing.assert_allclose(vectors, reference_vectors[picks], atol=1e-5)


def test_a_second_run_embeds_nothing(engine: Engine, first_release: tuple[list[int], EmbedStats]) -> None:
    idle = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_TORCH, device="cpu")
    stats = embed_pending(engine, idle)
    assert (stats.reused, stats.embedded) == (0, 0)
    assert not idle.is_loaded


def test_unchanged_content_in_a_new_release_is_reused_without_the_model(
    engine: Engine, ncd_passages: list[tuple[str | None, str]], first_release: tuple[list[int], EmbedStats]
) -> None:
    chunk_ids, _ = first_release
    [carried_over] = _insert_chunks(engine, _new_document(engine, "2025Q2"), ncd_passages[7:8])
    idle = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_TORCH, device="cpu")
    stats = embed_pending(engine, idle)
    assert (stats.reused, stats.embedded) == (1, 0)
    assert not idle.is_loaded
    reused_vector, original_vector = _vectors(engine, [carried_over, chunk_ids[7]])
    np.testing.assert_array_equal(reused_vector, original_vector)


def test_changed_text_is_embedded_again_and_each_new_text_only_once(
    engine: Engine,
    ncd_passages: list[tuple[str | None, str]],
    embedder: DocumentEmbedder,
    sentence_transformer: Any,
    reference_vectors: np.ndarray,
    first_release: tuple[list[int], EmbedStats],
) -> None:
    chunk_ids, _ = first_release
    heading, body = ncd_passages[3]
    revised = body + " This sentence was added in the revision."
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE chunk SET text = :text, content_hash = :hash WHERE id = :id"),
            {"text": revised, "hash": _content_hash(heading, revised), "id": chunk_ids[3]},
        )
        conn.execute(text("DELETE FROM chunk_vector WHERE chunk_id = :id"), {"id": chunk_ids[3]})
    # The same revised passage in another document: one text to encode, two chunks to fill.
    [twin] = _insert_chunks(engine, _new_document(engine, "2025Q3"), [(heading, revised)])
    lines: list[str] = []
    with reporting(LineSink(lines.append)):
        stats = embed_pending(engine, embedder)
    assert (stats.reused, stats.embedded) == (0, 2)
    # 50 distinct texts now (passage 3's old text is gone, its revision is new), 49 of them embedded before
    assert lines[-1].startswith(f"embed: {CHUNK_COUNT}/{CHUNK_COUNT} chunks (100%)"), lines
    revised_vector, twin_vector = _vectors(engine, [chunk_ids[3], twin])
    [expected] = _reference_vectors(sentence_transformer, [_embedded_text(heading, revised)])
    np.testing.assert_allclose(revised_vector, expected, atol=1e-5)
    np.testing.assert_array_equal(twin_vector, revised_vector)
    assert float(np.dot(revised_vector, reference_vectors[3])) < 0.9999


def test_a_chunk_with_embedding_text_is_embedded_from_it(
    engine: Engine, ncd_passages: list[tuple[str | None, str]], embedder: DocumentEmbedder,
    sentence_transformer: Any, first_release: tuple[list[int], EmbedStats],
) -> None:
    heading, body = ncd_passages[5]
    item_words = "Continuous positive airway pressure (cpap) device"
    [chunk_id] = _insert_chunks(engine, _new_document(engine, "2025Q4"), [(heading, body)])
    with engine.begin() as conn:  # the plain twin's hash would hand it the passage's vector
        conn.execute(text("UPDATE chunk SET embedding_text = :words, content_hash = 'item words' WHERE id = :id"),
                     {"words": item_words, "id": chunk_id})
    stats = embed_pending(engine, embedder)
    assert (stats.reused, stats.embedded) == (0, 1)
    [vector] = _vectors(engine, [chunk_id])
    [expected] = _reference_vectors(sentence_transformer, [item_words])
    np.testing.assert_allclose(vector, expected, atol=1e-5)


def test_shards_split_the_pending_texts_between_workers(
    engine: Engine, ncd_passages: list[tuple[str | None, str]], embedder: DocumentEmbedder,
    first_release: tuple[list[int], EmbedStats],
) -> None:
    """Three shards embed disjoint parts that together are everything pending, each text once, nothing reused."""
    changed = [(heading, body + " (shard test)") for heading, body in ncd_passages[:12]]
    chunk_ids = _insert_chunks(engine, _new_document(engine, "2026Q1"), changed)
    parts = [embed_pending(engine, embedder, batch_size=4, shard=shard, shards=3) for shard in range(3)]
    assert sum(part.embedded for part in parts) == len(changed)
    assert all(part.embedded < len(changed) for part in parts)  # each did a part, not the whole
    assert all(vector is not None for vector in _vectors(engine, chunk_ids))
    with engine.connect() as conn:
        by_shard = dict(conn.execute(text(
            "SELECT mod(abs(hashtext(content_hash)), 3), count(*) FROM chunk WHERE id = ANY(:ids) GROUP BY 1"),
            {"ids": chunk_ids}).all())
    assert [by_shard.get(shard, 0) for shard in range(3)] == [part.embedded for part in parts]
    with pytest.raises(EmbeddingError, match="shard 3"):
        embed_pending(engine, embedder, shard=3, shards=3)


def test_writes_in_parallel_fill_every_chunk_once_with_the_same_vectors(
    engine: Engine, ncd_passages: list[tuple[str | None, str]], embedder: DocumentEmbedder,
    first_release: tuple[list[int], EmbedStats],
) -> None:
    """Three writers at once, a commit every 2 texts: every pending chunk filled, as one writer fills it."""
    changed = [(heading, body + " (writers test)") for heading, body in ncd_passages[20:31]]
    chunk_ids = _insert_chunks(engine, _new_document(engine, "2026Q2"), changed)
    stats = embed_pending(engine, embedder, batch_size=5, commit_texts=2, writers=3)
    assert (stats.reused, stats.embedded) == (0, len(changed))
    expected = embedder.encode([_embedded_text(heading, body) for heading, body in changed])
    for vector, reference in zip(_vectors(engine, chunk_ids), expected, strict=True):
        np.testing.assert_allclose(vector, reference, atol=1e-6)


def test_vectors_are_written_as_copy_bytes_to_each_chunk_and_a_deleted_chunk_is_skipped(
    engine: Engine, db_url: str, ncd_passages: list[tuple[str | None, str]],
) -> None:
    """write_vectors: numpy's COPY bytes read back as the same floats, sources and model on every chunk of a text;
    another model's vector is replaced; a chunk deleted since it was read is left out, the rest still written."""
    chunk_ids = _insert_chunks(engine, _new_document(engine, "copy-bytes"),
                               [(None, f"copy bytes passage {n}") for n in range(4)])
    with engine.begin() as conn:
        hcpcs = conn.execute(text(
            "WITH d AS (INSERT INTO document (release_id, source, key, title, content_hash) "
            "SELECT release_id, 'hcpcs', 'X9999', 'code', 'x' FROM document WHERE id = "
            "(SELECT document_id FROM chunk WHERE id = :c) RETURNING id) "
            "INSERT INTO chunk (document_id, ordinal, text, content_hash) SELECT id, 0, 'code', 'x' FROM d "
            "RETURNING id"), {"c": chunk_ids[0]}).scalar_one()
        models = [conn.execute(text(
            "INSERT INTO embedding_model (name, digest, backend, dimension) VALUES (:n, 'd', 'b', 384) RETURNING id"),
            {"n": f"copy-bytes-{n}"}).scalar_one() for n in range(2)]
        conn.execute(text("INSERT INTO chunk_vector (chunk_id, source, model_id, embedding) "
                          "SELECT :c, 'ncd', :m, array_fill(0.5, ARRAY[384])::vector"),
                     {"c": chunk_ids[3], "m": models[0]})
        conn.execute(text("DELETE FROM chunk WHERE id = :c"), {"c": chunk_ids[2]})
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3, 384)).astype(np.float32)
    texts = [PendingText("a", [chunk_ids[0], hcpcs], ["ncd", "hcpcs"]), PendingText("b", [chunk_ids[1]], ["ncd"]),
             PendingText("c", [chunk_ids[2], chunk_ids[3]], ["ncd", "ncd"])]
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        assert write_vectors(conn, texts, vectors, models[1]) == 4  # five chunks named, one of them gone
    with engine.connect() as conn:
        rows = {row.chunk_id: row for row in conn.execute(text(
            "SELECT chunk_id, source, model_id, embedding::real[] AS vector FROM chunk_vector "
            "WHERE chunk_id = ANY(:ids)"), {"ids": [*chunk_ids, hcpcs]})}
    assert sorted(rows) == sorted([chunk_ids[0], chunk_ids[1], chunk_ids[3], hcpcs])
    assert {row.source for row in rows.values()} == {"ncd", "hcpcs"} and rows[hcpcs].source == "hcpcs"
    assert {row.model_id for row in rows.values()} == {models[1]}
    for chunk_id, expected in ((chunk_ids[0], 0), (hcpcs, 0), (chunk_ids[1], 1), (chunk_ids[3], 2)):
        np.testing.assert_array_equal(np.asarray(rows[chunk_id].vector, dtype=np.float32), vectors[expected])


def test_torch_on_a_gpu_batches_large_and_shares_the_cpu_identity() -> None:
    """fp16 on a GPU and float32 on a CPU make the same vectors to rounding: a CPU refresh reuses a GPU's vectors."""
    model = load_settings().embedding_model
    on_gpu = DocumentEmbedder(model, backend=BACKEND_TORCH, device="cuda")
    on_cpu = DocumentEmbedder(model, backend=BACKEND_TORCH, device="cpu")
    assert on_gpu.identity == on_cpu.identity and on_cpu.identity.export_format == ""
    assert on_gpu.batch_size > on_cpu.batch_size == 64 and not on_gpu.is_loaded


def test_a_missing_model_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="MEDRAG_EMBEDDING_MODEL"):
        DocumentEmbedder(str(tmp_path / "no-such-model"), device="cpu").load()


def test_an_onnx_export_that_cannot_be_written_is_a_user_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the export cache would go")
    embedder = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_ONNX, cache_dir=blocker / "cache")
    with pytest.raises(EmbeddingError, match=r"^no ONNX export of the embedding model \(.*\); "
                                             r"set MEDRAG_EMBEDDING_BACKEND=torch$"):
        embedder.load()


def test_a_database_without_pgvector_is_a_user_error(empty_db_url: str) -> None:
    idle = DocumentEmbedder(load_settings().embedding_model, backend=BACKEND_TORCH, device="cpu")
    with pytest.raises(EmbeddingError, match="medrag db migrate"):
        embed_pending(get_engine(url=empty_db_url), idle)
