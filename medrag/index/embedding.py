"""The embedding stage: fill chunk.embedding, reusing vectors by content hash and writing new ones with binary COPY."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
from sqlalchemy import Engine

from medrag.core.db import libpq_url
from medrag.core.errors import MedragError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# The text a chunk's vector is computed from, as SQL over the chunk table; the one place it is defined, so the
# indexing stage, any re-check and the query side all agree on what a chunk "says": its embedding_text when the
# document builder gave one (HCPCS codes: the item's descriptions), else heading and text.
EMBED_TEXT_SQL = "coalesce(embedding_text, coalesce(heading || E'\\n', '') || text)"

# A chunk whose content_hash already has a vector in any release gets that vector: unchanged text across
# quarterly releases is never sent to the model again. Joining from the pending rows keeps the cost proportional
# to what is new, not to the whole table.
_REUSE_BY_CONTENT_HASH = """
WITH donor AS (
    SELECT DISTINCT ON (pending.content_hash) pending.content_hash, embedded.embedding
    FROM chunk AS pending
    JOIN chunk AS embedded ON embedded.content_hash = pending.content_hash AND embedded.embedding IS NOT NULL
    WHERE pending.embedding IS NULL AND {in_shard}
    ORDER BY pending.content_hash
)
UPDATE chunk SET embedding = donor.embedding
FROM donor
WHERE chunk.embedding IS NULL AND chunk.content_hash = donor.content_hash
"""

# Optionally only chunks of some document sources (tests embed the prose sources, not 53k code documents).
_IN_SOURCES = (
    "(%(sources)s::text[] IS NULL OR document_id IN (SELECT id FROM document WHERE source = ANY(%(sources)s)))"
)
# Optionally one shard of the texts (their content hash hashed, modulo the shard count): workers embedding shards
# at once never touch the same rows.
_IN_SHARD = "(%(shards)s::int IS NULL OR mod(abs(hashtext({column})), %(shards)s::int) = %(shard)s::int)"
_COUNT_PENDING_TEXTS = (f"SELECT count(DISTINCT content_hash) FROM chunk WHERE embedding IS NULL AND {_IN_SOURCES} "
                        f"AND {_IN_SHARD.format(column='content_hash')}")

# Keyset pagination on content_hash: each batch starts after the last hash seen, so a batch that fills nothing
# (a concurrent writer, say) can never make the loop spin on the same rows.
_SELECT_PENDING_TEXTS = f"""
SELECT DISTINCT ON (content_hash) content_hash, {EMBED_TEXT_SQL}
FROM chunk
WHERE embedding IS NULL AND content_hash > %(after)s AND {_IN_SOURCES} AND {_IN_SHARD.format(column="content_hash")}
ORDER BY content_hash, id
LIMIT %(limit)s
"""

_CREATE_BATCH_TABLE = "CREATE TEMP TABLE embedding_batch (content_hash text, embedding vector) ON COMMIT DROP"
_COPY_BATCH = "COPY embedding_batch (content_hash, embedding) FROM STDIN WITH (FORMAT BINARY)"
_APPLY_BATCH = """
UPDATE chunk SET embedding = embedding_batch.embedding
FROM embedding_batch
WHERE chunk.embedding IS NULL AND chunk.content_hash = embedding_batch.content_hash
"""

ProgressCallback = Callable[[int, int], None]


class EmbeddingError(MedragError):
    """The embedding stage cannot run: the model cannot be loaded, or the database lacks pgvector."""


class DocumentEmbedder:
    """A sentence-transformers model for indexing: loaded on first use, batched, unit-length float32 vectors."""

    def __init__(self, model_path: str, *, device: str | None = None, batch_size: int = 64) -> None:
        self.model_path = str(model_path)
        self.batch_size = batch_size
        self._device = device
        self._model: SentenceTransformer | None = None

    @property
    def is_loaded(self) -> bool:
        """True once the model has been loaded (a stage with nothing new to embed never loads it)."""
        return self._model is not None

    @property
    def device(self) -> str:
        """The torch device the model runs on: the one given, else cuda when available, else cpu."""
        if self._device is None:
            import torch

            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    def load(self) -> SentenceTransformer:
        """Load the model from model_path now (once), without touching the network, and return it."""
        if self._model is None:
            # Must be set before huggingface_hub is imported: it reads the variable once, at import.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:
                self._model = SentenceTransformer(self.model_path, device=self.device)
            except OSError as error:  # a missing or incomplete folder; offline, a hub name cannot be fetched
                raise EmbeddingError(
                    f"cannot load the embedding model {self.model_path!r} ({error}); set MEDRAG_EMBEDDING_MODEL"
                ) from error
        return self._model

    @property
    def model(self) -> SentenceTransformer:
        """The model, loaded on first access."""
        return self.load()

    @property
    def dimension(self) -> int:
        """Length of the vectors this model produces."""
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors for texts, in their order: float32, L2-normalised, one row per text."""
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        # Longest first, so each batch holds texts of similar length and pads little; the result is put back
        # in the caller's order below.
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]), reverse=True)
        vectors = self.model.encode(
            [texts[index] for index in order],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        restored = np.empty_like(vectors, dtype=np.float32)
        restored[order] = vectors
        return restored


@dataclass(frozen=True)
class EmbedStats:
    """What one run of the embedding stage did and how long its parts took."""

    reused: int
    embedded: int
    seconds_encode: float
    seconds_write: float  # overlaps the encoding: the stage's time is less than the two added up
    chunks_per_second: float


def _reuse_embedded(conn: psycopg.Connection[Any], shard: dict[str, int | None]) -> int:
    with conn.transaction():
        statement = _REUSE_BY_CONTENT_HASH.format(in_shard=_IN_SHARD.format(column="pending.content_hash"))
        return conn.execute(statement, shard).rowcount


def _timed_write(conn: psycopg.Connection[Any], hashes: list[str], vectors: np.ndarray, seconds: list[float]) -> int:
    started = time.perf_counter()
    written = _write_batch(conn, hashes, vectors)
    seconds.append(time.perf_counter() - started)
    return written


def _write_batch(conn: psycopg.Connection[Any], hashes: list[str], vectors: np.ndarray) -> int:
    with conn.transaction(), conn.cursor() as cursor:
        cursor.execute(_CREATE_BATCH_TABLE)
        with cursor.copy(_COPY_BATCH) as copy:
            copy.set_types(["text", "vector"])
            for content_hash, vector in zip(hashes, vectors, strict=True):
                copy.write_row((content_hash, vector))
        return cursor.execute(_APPLY_BATCH).rowcount


def embed_pending(
    engine: Engine,
    embedder: DocumentEmbedder,
    *,
    batch_size: int = 256,
    progress: ProgressCallback | None = None,
    sources: list[str] | None = None,
    shard: int = 0,
    shards: int | None = None,
) -> EmbedStats:
    """Give every chunk without a vector one: reuse by content_hash first, then encode each new text once.

    With `shards`, only the texts of shard number `shard` (0-based): that many workers can run at once.
    """
    if shards is not None and not 0 <= shard < shards:
        raise EmbeddingError(f"shard {shard} is not one of 0..{shards - 1}")
    in_shard = {"shard": shard, "shards": shards}
    from pgvector.psycopg import register_vector

    # Private connections: registering pgvector's binary adapters on a pooled one would change what every later
    # user of that pooled connection gets back for vector columns. Two of them: batch N's vectors are written (and
    # indexed into HNSW, in the server's own process) on `writer` while batch N+1 is encoded here, so the stage
    # runs close to the model's bare rate instead of adding the writes on top.
    url = libpq_url(engine.url.render_as_string(hide_password=False))
    seconds_encode = 0.0
    write_seconds: list[float] = []
    embedded = done_texts = 0
    started_stage = time.perf_counter()
    with (psycopg.connect(url, autocommit=True) as conn, psycopg.connect(url, autocommit=True) as writer,
          ThreadPoolExecutor(max_workers=1, thread_name_prefix="medrag-embed-write") as background):
        try:
            register_vector(conn)
            register_vector(writer)
        except psycopg.ProgrammingError as error:
            raise EmbeddingError(f"the database has no pgvector type ({error}); run `medrag db migrate`") from error
        reused = _reuse_embedded(conn, in_shard)
        total_texts = conn.execute(_COUNT_PENDING_TEXTS, {"sources": sources, **in_shard}).fetchone()[0]
        if total_texts:
            embedder.load()  # outside the timed stage, so chunks_per_second measures embedding alone
            started_stage = time.perf_counter()
        after_hash = ""
        writing: Future[int] | None = None
        while rows := conn.execute(
            _SELECT_PENDING_TEXTS, {"after": after_hash, "limit": batch_size, "sources": sources, **in_shard}
        ).fetchall():
            hashes = [content_hash for content_hash, _ in rows]
            started = time.perf_counter()
            vectors = embedder.encode([text for _, text in rows])
            seconds_encode += time.perf_counter() - started
            if writing is not None:
                embedded += writing.result()  # one write in flight at a time; its error surfaces here
            writing = background.submit(_timed_write, writer, hashes, vectors, write_seconds)
            after_hash = hashes[-1]  # keyset paging: rows being written have hashes <= this, never re-read
            done_texts += len(rows)
            if progress is not None:
                progress(done_texts, max(done_texts, total_texts))
        if writing is not None:
            embedded += writing.result()
        # The planner's statistics for chunk (and its partial/vector indexes) are stale after a bulk fill.
        conn.execute("ANALYZE chunk")
    seconds_write = sum(write_seconds)
    busy = time.perf_counter() - started_stage if embedded else 0.0
    return EmbedStats(
        reused=reused,
        embedded=embedded,
        seconds_encode=seconds_encode,
        seconds_write=seconds_write,
        chunks_per_second=embedded / busy if busy > 0 else 0.0,
    )


def combine_stats(parts: list[EmbedStats]) -> EmbedStats:
    """One EmbedStats for shards that ran side by side: counts and seconds add up, and so do the rates."""
    return EmbedStats(
        reused=sum(part.reused for part in parts),
        embedded=sum(part.embedded for part in parts),
        seconds_encode=sum(part.seconds_encode for part in parts),
        seconds_write=sum(part.seconds_write for part in parts),
        chunks_per_second=sum(part.chunks_per_second for part in parts),
    )
