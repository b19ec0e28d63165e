"""The embedding stage: a chunk_vector row per chunk, reusing vectors by content hash, new ones by binary COPY."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import itertools
import os
import queue
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import Engine

from medrag.core.config import Settings
from medrag.core.db import libpq_url
from medrag.core.errors import MedragError
from medrag.core.progress import Tracker, track
from medrag.index.encoder import BatchEncoder, TokenBatch, UnsupportedModelError
from medrag.index.model_words import store_model_words
from medrag.index.onnx_model import (
    BACKEND_ONNX_INT8,
    BACKEND_TORCH,
    DEFAULT_BACKEND,
    EXPORT_FORMAT,
    OnnxEncoder,
    check_backend,
    export_onnx,
    model_content_digest,
)
from medrag.index.torch_model import CUDA_BATCH_TEXTS, TorchEncoder
from medrag.index.vector_copy import COPY_VECTORS, copy_payload

# The text a chunk's vector is computed from, as SQL over the chunk table; the one place it is defined, so the
# indexing stage, any re-check and the query side all agree on what a chunk "says": its embedding_text when the
# document builder gave one (HCPCS codes: the item's descriptions), else heading and text.
EMBED_TEXT_SQL = "coalesce(embedding_text, coalesce(heading || E'\\n', '') || text)"

# A chunk is pending when it has no vector made by the model and backend configured now (%(model)s): a vector of
# another model, or one whose maker was never recorded, would be a point in another space.
def _pending(table: str) -> str:
    return f"NOT EXISTS (SELECT 1 FROM chunk_vector AS own WHERE own.chunk_id = {table}id AND own.model_id = %(model)s)"


_PENDING = _pending("chunk.")

# A pending chunk whose content_hash already has a vector of this model in any release gets that vector: unchanged
# text across quarterly releases is never sent to the model again. Joining from the pending rows keeps the cost
# proportional to what is new, not to the whole table.
# (A vector of another model is replaced: a chunk has one vector, whichever made it.)
_REUSE_BY_CONTENT_HASH = f"""
WITH donor AS (
    SELECT DISTINCT ON (pending.content_hash) pending.content_hash, made.embedding
    FROM chunk AS pending
    JOIN chunk AS embedded ON embedded.content_hash = pending.content_hash
    JOIN chunk_vector AS made ON made.chunk_id = embedded.id AND made.model_id = %(model)s
    WHERE {_pending("pending.")} AND {{in_scope}}
    ORDER BY pending.content_hash
)
INSERT INTO chunk_vector (chunk_id, source, model_id, embedding)
SELECT chunk.id, chunk.source, %(model)s, donor.embedding
FROM donor JOIN chunk ON chunk.content_hash = donor.content_hash
WHERE {_pending("chunk.")}
ON CONFLICT (chunk_id) DO UPDATE SET model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding
"""

# Optionally only chunks of some document sources (tests embed the prose sources, not 53k code documents).
_IN_SOURCES = "(%(sources)s::text[] IS NULL OR {table}source = ANY(%(sources)s))"
# Optionally one shard of the texts (their content hash hashed, modulo the shard count): workers embedding shards
# at once never touch the same rows.
_IN_SHARD = "(%(shards)s::int IS NULL OR mod(abs(hashtext({table}content_hash)), %(shards)s::int) = %(shard)s::int)"


def _in_scope(table: str = "") -> str:
    return f"{_IN_SOURCES.format(table=table)} AND {_IN_SHARD.format(table=table)}"


# Texts in scope, and those still pending: the progress display starts from what an earlier, interrupted run did.
_COUNT_TEXTS = f"""
SELECT count(DISTINCT content_hash), count(DISTINCT content_hash) FILTER (WHERE {_PENDING})
FROM chunk WHERE {_in_scope()}
"""
_PENDING_ROWS_BY_SOURCE = f"SELECT source, count(*) FROM chunk WHERE {_PENDING} AND {_in_scope()} GROUP BY source"

# Each pending text once, with the chunks that say it (their ids and sources: the vector is written straight to
# their rows). Keyset pagination on content_hash: each window starts after the last hash seen, so a window that
# fills nothing (a concurrent writer, say) can never make the loop spin on the same rows.
_SELECT_PENDING_TEXTS = f"""
SELECT content_hash, (array_agg({EMBED_TEXT_SQL} ORDER BY id))[1], array_agg(id ORDER BY id),
       array_agg(source ORDER BY id)
FROM chunk
WHERE {_PENDING} AND content_hash > %(after)s AND {_in_scope()}
GROUP BY content_hash
ORDER BY content_hash
LIMIT %(limit)s
"""
# Another model's vectors of the same chunks go first: the COPY adds rows, it never replaces one.
_DROP_REPLACED = "DELETE FROM chunk_vector WHERE chunk_id = ANY(%s)"
_STILL_THERE = "SELECT id FROM chunk WHERE id = ANY(%s)"

_FIND_MODEL = """
SELECT id FROM embedding_model
WHERE name = %(name)s AND digest = %(digest)s AND backend = %(backend)s AND export_format = %(export_format)s
"""
_REGISTER_MODEL = """
INSERT INTO embedding_model (name, digest, backend, export_format, dimension)
VALUES (%(name)s, %(digest)s, %(backend)s, %(export_format)s, %(dimension)s)
ON CONFLICT (name, digest, backend, export_format) DO UPDATE SET dimension = EXCLUDED.dimension
RETURNING id
"""
_COLUMN_DIMENSION = """
SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunk_vector'::regclass AND attname = 'embedding'
"""

# Texts read and length-sorted together (keyset on content hash): the sort is what keeps padding small, and a
# window of 4,096 encoded as fast as one sort over all texts (a window of 1,024 ran at 0.93 of it; 6,144 chunk
# texts, int8, 2 cores). Vectors are written and committed every COMMIT_TEXTS, so a killed run loses little.
WINDOW_TEXTS = 4096
COMMIT_TEXTS = 1024
# Texts per model call on a CPU: the batch the ONNX stage's rates were measured with (benchmarks/ingest.py).
CPU_BATCH_TEXTS = 64
# int8 quantises a batch's activations with one scale, so a text's int8 vector depended on the texts batched with
# it (the same chunks in other batches: cosine 0.990 to 0.999). One text per call makes each vector its own, the
# same as its question's (queries are embedded one at a time). Against batches of 64 on the same corpus and code:
# retrieval MRR dev 0.8383 -> 0.8438, holdout 0.804 -> 0.8087; code top-1 one term lower on dev and on the second
# holdout; one holdout answer refusal fewer (docs/results/meta.json). Nothing is padded, which pays for the calls: a
# first refresh's stage ran at 111.9 chunks/s (bare model 125.5/s), against 100.9 (115.1) with batches of 64 in
# an earlier run on the same kind of 2-core machine (docs/results/bench_ingest.json).
INT8_BATCH_TEXTS = 1
# On a GPU the model outruns one writer: with vectors COPYed into chunk_vector, one connection filled 15,914
# chunks/s and four 18,764 (run 7); with the stages interleaved, four filled 19,147 and 17,207, eight 17,599 and
# 20,287 (run 8): four is where more writers stop helping. Commits of 4,096 filled 9-10% faster than of 1,024 in
# three runs. An H200 with 16 cores; docs/results/bench_embed_gpu.json. The rows of different writes never overlap.
CUDA_WRITERS = 4
CUDA_COMMIT_TEXTS = 4096
# A source's vector graph is dropped and built again after the fill when the fill at least doubles it and adds
# this many rows: one CREATE INDEX (parallel, in maintenance_work_mem) costs a fraction of row-by-row inserts
# (10,000 ICD-10-CM vectors: 18.6 s inserted one by one into the m=24 graph, 5.3 s built at once), and the inserts
# would compete with the model for the same cores. Queries meanwhile scan that source's vectors exactly.
DEFER_INDEX_MIN_ROWS = 2000

_VECTOR_INDEXES = """
SELECT index_class.relname, pg_get_indexdef(index_class.oid), pg_get_expr(pg_index.indpred, pg_index.indrelid)
FROM pg_index
JOIN pg_class AS index_class ON index_class.oid = pg_index.indexrelid
JOIN pg_am ON pg_am.oid = index_class.relam
WHERE pg_index.indrelid = 'chunk_vector'::regclass AND pg_am.amname IN ('hnsw', 'ivfflat')
"""
_PREDICATE_SOURCE = re.compile(r"'([a-z0-9_]+)'::text")  # a graph's kinds: source = 'ncd', or = ANY (ARRAY[...])
_ROWS_WITH_VECTORS = "SELECT source, count(*) FROM chunk_vector GROUP BY source"


class EmbeddingError(MedragError):
    """The embedding stage cannot run: the model cannot be loaded, or the database lacks pgvector."""


@dataclass(frozen=True)
class ModelIdentity:
    """What made a vector: the model (folder name and content digest) and the backend that ran it."""

    name: str
    digest: str
    backend: str
    export_format: str  # how the ONNX graph was made (a new quantisation recipe is a new maker); '' for torch

    def __str__(self) -> str:
        return f"{self.name} {self.digest} ({self.backend}{', ' + self.export_format if self.export_format else ''})"


class DocumentEmbedder:
    """The embedding model for indexing: loaded on first use, batched by length, unit-length float32 vectors.

    backend "onnx-int8" / "onnx" run the model's ONNX export through onnxruntime on every core; "torch" runs the
    transformer through torch (fp16 on CUDA when there is one, in batches of CUDA_BATCH_TEXTS).
    """

    def __init__(self, model_path: str, *, backend: str = DEFAULT_BACKEND, cache_dir: str | Path | None = None,
                 device: str | None = None, batch_size: int | None = None, width_multiple: int = 1) -> None:
        check_backend(backend, EmbeddingError)
        self.model_path = str(model_path)
        self.backend = backend
        self.cache_dir = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "medrag-models"
        self._batch_size = batch_size
        self.width_multiple = width_multiple  # torch: batch widths rounded up to this (BatchEncoder.width_multiple)
        self._device = device
        self._model: BatchEncoder | None = None
        self._loading = threading.Lock()  # shards of one flow share this embedder: the model loads once

    @classmethod
    def for_settings(cls, settings: Settings) -> DocumentEmbedder:
        """The embedder for the configured model and backend, its exports cached in the settings' models folder."""
        return cls(settings.embedding_model, backend=settings.embedding_backend, cache_dir=settings.models_dir)

    @property
    def is_loaded(self) -> bool:
        """True once the model has been loaded (a stage with nothing new to embed never loads it)."""
        return self._model is not None

    @property
    def device(self) -> str:
        """Where the model runs: the torch device (given, else cuda when available, else cpu), or onnxruntime's cpu."""
        if self.backend != BACKEND_TORCH:
            return "cpu"
        if self._device is None:
            import torch

            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    @property
    def batch_size(self) -> int:
        """Texts per model call: the one given, else one for int8 (a vector of its own), large on a GPU, else 64."""
        if self._batch_size is not None:
            return self._batch_size
        if self.backend == BACKEND_ONNX_INT8:
            return INT8_BATCH_TEXTS
        return CUDA_BATCH_TEXTS if self.device == "cuda" else CPU_BATCH_TEXTS

    def load(self) -> BatchEncoder:
        """Load the model from model_path now (once), without touching the network, and return it."""
        with self._loading:
            if self._model is None:
                self._folder()
                self._model = self._load_torch() if self.backend == BACKEND_TORCH else self._load_onnx()
        return self._model

    def prepare(self, texts: list[str]) -> list[TokenBatch]:
        """The texts tokenised and padded into the model's length-sorted batches (rows index texts)."""
        model = self.load()
        return list(model.batches(model.tokenize(texts), self.batch_size))

    def _folder(self) -> Path:
        folder = Path(self.model_path)
        if not folder.is_dir():
            raise EmbeddingError(f"cannot load the embedding model {self.model_path!r} (no such folder); "
                                 "set MEDRAG_EMBEDDING_MODEL")
        return folder

    def _load_onnx(self) -> OnnxEncoder:
        try:
            onnx_path = export_onnx(self.model_path, self.cache_dir, int8=self.backend == BACKEND_ONNX_INT8)
        except (UnsupportedModelError, OSError) as error:  # an unsupported pipeline, or a cache it cannot write
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise EmbeddingError(f"no ONNX export of the embedding model ({reason}); "
                                 "set MEDRAG_EMBEDDING_BACKEND=torch") from error
        return OnnxEncoder(self.model_path, onnx_path, threads=os.cpu_count())

    def _load_torch(self) -> TorchEncoder:
        try:
            encoder = TorchEncoder(self.model_path, device=self.device, width_multiple=self.width_multiple)
        except (UnsupportedModelError, OSError) as error:  # an incomplete folder; offline, a hub name cannot load
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise EmbeddingError(f"cannot load the embedding model {self.model_path!r} ({reason}); "
                                 "set MEDRAG_EMBEDDING_MODEL") from error
        if self.device == "cuda":
            encoder.warm_up(self.batch_size)  # with rounded widths, each shape's first call is paid here, once
        return encoder

    @property
    def model(self) -> BatchEncoder:
        """The model, loaded on first access."""
        return self.load()

    @property
    def dimension(self) -> int:
        """Length of the vectors this model produces."""
        return self.model.dimension

    @functools.cached_property
    def identity(self) -> ModelIdentity:
        """The model's name, content digest and backend (without loading it): vectors are kept per identity."""
        folder = self._folder()
        # a packaged model sits in a folder called "model" inside its package: the package names it
        name = folder.parent.name if folder.name == "model" else folder.name
        if self.backend == BACKEND_ONNX_INT8:  # its vectors depend on the batch they were made in
            export_format = f"{EXPORT_FORMAT}/batch-{self.batch_size}"
        elif self.backend != BACKEND_TORCH:
            export_format = EXPORT_FORMAT
        else:  # fp16 on a GPU and float32 on a CPU make the same vectors to cosine 0.99999 (500 chunk texts): one maker
            export_format = ""
        return ModelIdentity(name=name, digest=model_content_digest(folder), backend=self.backend,
                             export_format=export_format)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors for texts, in their order: float32, L2-normalised, one row per text."""
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        return self.model.encode(texts, batch_size=self.batch_size)


@dataclass(frozen=True)
class EmbedStats:
    """What one run of the embedding stage did and how long its parts took."""

    reused: int
    embedded: int
    seconds_encode: float
    seconds_write: float  # overlaps the encoding: the stage's time is less than the two added up
    chunks_per_second: float
    seconds_index: float = 0.0  # rebuilding vector graphs dropped for a bulk fill (deferred_indexes)
    seconds_starved: float = 0.0  # the model waiting for the next texts to be read, tokenised and padded
    model: str = ""


def _register_model(conn: psycopg.Connection[Any], embedder: DocumentEmbedder) -> int:
    """The model's id in embedding_model (added on its first use), once its vectors are known to fit the column."""
    dimension = embedder.dimension
    column_dimension = conn.execute(_COLUMN_DIMENSION).fetchone()[0]
    if column_dimension > 0 and column_dimension != dimension:
        raise EmbeddingError(f"the model makes {dimension}-dimension vectors and chunk_vector.embedding holds "
                             f"{column_dimension}: a model of another size needs a migration of the vector column")
    with conn.transaction():
        return conn.execute(_REGISTER_MODEL, {**dataclasses.asdict(embedder.identity), "dimension": dimension}
                            ).fetchone()[0]


def _reuse_embedded(conn: psycopg.Connection[Any], scope: dict[str, Any]) -> int:
    with conn.transaction():
        return conn.execute(_REUSE_BY_CONTENT_HASH.format(in_scope=_in_scope("pending.")), scope).rowcount


@dataclass(frozen=True)
class PendingText:
    """A text to embed, and the chunks (ids and sources) that say it: its vector is written to each."""

    content_hash: str
    chunk_ids: list[int]
    sources: list[str]


def _timed_write(connections: queue.SimpleQueue[psycopg.Connection[Any]], texts: list[PendingText],
                 vectors: np.ndarray, model_id: int, seconds: list[float]) -> int:
    conn = connections.get()  # a free writer connection: as many writes run at once as there are connections
    try:
        started = time.perf_counter()
        written = write_vectors(conn, texts, vectors, model_id)
        seconds.append(time.perf_counter() - started)
        return written
    finally:
        connections.put(conn)


def write_vectors(conn: psycopg.Connection[Any], texts: list[PendingText], vectors: np.ndarray, model_id: int
                  ) -> int:
    """Each text's vector on every chunk that says it, in one transaction; the chunk rows written.

    A chunk deleted since it was read (its release's documents rebuilt meanwhile) is skipped, not an error.
    """
    chunk_ids = [chunk_id for text in texts for chunk_id in text.chunk_ids]
    sources = [source for text in texts for source in text.sources]
    rows = np.repeat(vectors, [len(text.chunk_ids) for text in texts], axis=0)
    try:
        return _copy_vectors(conn, chunk_ids, sources, rows, model_id)
    except psycopg.errors.ForeignKeyViolation:
        still_there = {chunk_id for (chunk_id,) in conn.execute(_STILL_THERE, (chunk_ids,))}
        keep = [chunk_id in still_there for chunk_id in chunk_ids]
        return _copy_vectors(conn, list(itertools.compress(chunk_ids, keep)), list(itertools.compress(sources, keep)),
                             rows[np.asarray(keep, dtype=bool)], model_id)


def _copy_vectors(conn: psycopg.Connection[Any], chunk_ids: list[int], sources: list[str], rows: np.ndarray,
                  model_id: int) -> int:
    with conn.transaction(), conn.cursor() as cursor:
        cursor.execute(_DROP_REPLACED, (chunk_ids,))
        with cursor.copy(COPY_VECTORS) as copy:
            copy.write(copy_payload(chunk_ids, sources, model_id, rows))
    return len(chunk_ids)


def embed_pending(
    engine: Engine,
    embedder: DocumentEmbedder,
    *,
    batch_size: int = WINDOW_TEXTS,
    sources: list[str] | None = None,
    shard: int = 0,
    shards: int | None = None,
    label: str = "embed",
    commit_texts: int | None = None,
    writers: int | None = None,
) -> EmbedStats:
    """Give every chunk without a vector of this model one: reuse by content_hash first, then encode each new text once.

    Texts are read in windows of `batch_size` (keyset on content_hash), their vectors written and committed
    `commit_texts` at a time (COMMIT_TEXTS; CUDA_COMMIT_TEXTS on a GPU), so a run killed midway keeps what it wrote
    and the next run does only the rest. With `shards`, only the texts of shard number `shard` (0-based): that many
    workers can run at once. `writers` writes run at once (default: one on a CPU, where the model needs the cores;
    CUDA_WRITERS on a GPU, which outruns one writer).
    """
    if shards is not None and not 0 <= shard < shards:
        raise EmbeddingError(f"shard {shard} is not one of 0..{shards - 1}")
    scope: dict[str, Any] = {"shard": shard, "shards": shards, "sources": sources}
    # Connections of the stage's own, one per concurrent use: vectors are written on `writers` connections while
    # the next texts are read, tokenised and padded on `reader` and encoded here, so the stage runs close to the
    # model's bare rate. Vectors travel as COPY bytes (medrag.index.vector_copy) and are reused in SQL: no
    # connection needs pgvector's adapters.
    url = libpq_url(engine.url.render_as_string(hide_password=False))
    on_gpu = embedder.device == "cuda"
    writers = writers or (CUDA_WRITERS if on_gpu else 1)
    commit_texts = commit_texts or (CUDA_COMMIT_TEXTS if on_gpu else COMMIT_TEXTS)
    seconds_encode = seconds_index = seconds_starved = 0.0
    write_seconds: list[float] = []
    embedded = 0
    free_writers: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
    with (psycopg.connect(url, autocommit=True) as conn, psycopg.connect(url, autocommit=True) as reader,
          contextlib.ExitStack() as writer_connections,
          ThreadPoolExecutor(max_workers=writers, thread_name_prefix="medrag-embed-write") as background,
          ThreadPoolExecutor(max_workers=1, thread_name_prefix="medrag-embed-read") as prefetch):
        if conn.execute("SELECT to_regtype('vector')").fetchone()[0] is None:
            raise EmbeddingError("the database has no pgvector type; run `medrag db migrate`")
        for _ in range(writers):
            free_writers.put(writer_connections.enter_context(psycopg.connect(url, autocommit=True)))
        identity = embedder.identity
        # 0 is no model's id: before its first use every chunk is pending for it
        scope["model"] = _known_model_id(conn, identity) or 0
        if scope["model"]:  # written once per model; a database migrated past 0033 gets them on its next run
            store_model_words(conn, scope["model"], embedder.model_path)
        pending_rows = dict(conn.execute(_PENDING_ROWS_BY_SOURCE, scope).fetchall())
        if not pending_rows:  # nothing to do: the model is never loaded
            rebuild_deferred_indexes(conn)  # a graph an interrupted run left dropped
            return EmbedStats(0, 0, 0.0, 0.0, 0.0, model=str(identity))
        if not scope["model"]:  # its first vectors: registered once the model shows they fit the column
            scope["model"] = _register_model(conn, embedder)
            store_model_words(conn, scope["model"], embedder.model_path)
        # shards run side by side: one would rebuild a graph while another still fills it
        deferred = defer_indexes(conn, pending_rows) if shards is None else []
        started_stage = time.perf_counter()
        try:
            reused = _reuse_embedded(conn, scope)
            total_texts, pending_texts = conn.execute(_COUNT_TEXTS, scope).fetchone()
            tracker = track(label, total=total_texts, unit="chunks", done=total_texts - pending_texts)

            def read_window(after_hash: str) -> tuple[list[PendingText], list[TokenBatch]]:
                """The next window's texts and padded batches, read, tokenised and padded while the model runs."""
                rows = reader.execute(_SELECT_PENDING_TEXTS, {**scope, "after": after_hash, "limit": batch_size}
                                      ).fetchall()
                if not rows:  # all reused: the model is never loaded
                    return [], []
                return ([PendingText(content_hash, chunk_ids, chunk_sources)
                         for content_hash, _, chunk_ids, chunk_sources in rows],
                        embedder.prepare([text for _, text, _, _ in rows]))

            writing: collections.deque[Future[int]] = collections.deque()
            reading = prefetch.submit(read_window, "")
            while True:
                waiting = time.perf_counter()
                window = reading.result()
                seconds_starved += time.perf_counter() - waiting
                if not window[0]:
                    break
                texts, batches = window
                # keyset paging: rows being written have hashes <= this, never re-read
                reading = prefetch.submit(read_window, texts[-1].content_hash)
                started = time.perf_counter()
                parts = _encode_window(embedder.model, batches, tracker, commit_texts)
                for part, vectors in parts:
                    seconds_encode += time.perf_counter() - started
                    if len(writing) >= writers:
                        embedded += writing.popleft().result()  # `writers` writes in flight; an error surfaces here
                    writing.append(background.submit(_timed_write, free_writers, [texts[row] for row in part],
                                                     vectors, scope["model"], write_seconds))
                    started = time.perf_counter()
            while writing:
                embedded += writing.popleft().result()
            tracker.close()
        except Exception:
            # Put the graphs back if the database still answers; if not, the next stage does (their definitions
            # stay in medrag_deferred_index). The error that stopped the stage is the one to report.
            with contextlib.suppress(psycopg.Error):
                rebuild_deferred_indexes(conn)
            raise
        started = time.perf_counter()
        rebuild_deferred_indexes(conn)
        seconds_index = time.perf_counter() - started if deferred else 0.0
        # The planner's statistics for chunk_vector (and its partial graphs) are stale after a bulk fill.
        conn.execute("ANALYZE chunk_vector")
        busy = time.perf_counter() - started_stage
    return EmbedStats(
        reused=reused,
        embedded=embedded,
        seconds_encode=seconds_encode,
        seconds_write=sum(write_seconds),
        chunks_per_second=embedded / busy if embedded and busy > 0 else 0.0,
        seconds_index=seconds_index,
        seconds_starved=seconds_starved,
        model=str(identity),
    )


def _encode_window(model: BatchEncoder, batches: list[TokenBatch], tracker: Tracker,
                   commit_texts: int) -> Iterator[tuple[list[int], np.ndarray]]:
    """A window's vectors as they are made, about commit_texts at a time: (the texts' positions, their vectors)."""
    rows: list[int] = []
    vectors: list[np.ndarray] = []
    for batch_rows, batch_vectors in model.run_all(batches):
        rows += batch_rows
        vectors.append(batch_vectors)
        tracker.advance(len(batch_rows))
        if len(rows) >= commit_texts:
            yield rows, np.concatenate(vectors)
            rows, vectors = [], []
    if rows:
        yield rows, np.concatenate(vectors)


def _known_model_id(conn: psycopg.Connection[Any], identity: ModelIdentity) -> int | None:
    """The id this model and backend were registered under, if any vector was ever made by them."""
    row = conn.execute(_FIND_MODEL, dataclasses.asdict(identity)).fetchone()
    return None if row is None else row[0]


@dataclass(frozen=True)
class VectorStatus:
    """How many chunks have a vector of the configured model and backend, and how many the next refresh embeds."""

    chunks: int
    current: int
    model: str

    @property
    def pending(self) -> int:
        """Chunks without a vector of the configured model (none, another model's, or one of unknown make)."""
        return self.chunks - self.current


def vector_status(engine: Engine, embedder: DocumentEmbedder) -> VectorStatus:
    """Chunks, and chunks whose vector the configured model and backend made (without loading the model)."""
    identity = embedder.identity
    with psycopg.connect(libpq_url(engine.url.render_as_string(hide_password=False))) as conn:
        model = _known_model_id(conn, identity) or 0
        chunks, current = conn.execute(
            "SELECT (SELECT count(*) FROM chunk), (SELECT count(*) FROM chunk_vector WHERE model_id = %(model)s)",
            {"model": model}).fetchone()
    return VectorStatus(chunks=chunks, current=current, model=str(identity))


def defer_indexes(conn: psycopg.Connection[Any], pending_rows: dict[str, int]) -> list[str]:
    """Drop the vector graphs a bulk fill would at least double, recording how to build each again; their names."""
    with_vectors = dict(conn.execute(_ROWS_WITH_VECTORS).fetchall())
    deferred = []
    for name, definition, predicate in conn.execute(_VECTOR_INDEXES).fetchall():
        sources = _PREDICATE_SOURCE.findall(predicate or "") or list(with_vectors.keys() | pending_rows.keys())
        pending = sum(pending_rows.get(source, 0) for source in sources)
        indexed = sum(with_vectors.get(source, 0) for source in sources)
        if pending >= DEFER_INDEX_MIN_ROWS and pending >= indexed:
            with conn.transaction():
                conn.execute("INSERT INTO medrag_deferred_index (name, definition) VALUES (%s, %s) "
                             "ON CONFLICT (name) DO UPDATE SET definition = EXCLUDED.definition", (name, definition))
                conn.execute(f'DROP INDEX IF EXISTS "{name}"')
            deferred.append(name)
    return deferred


def rebuild_deferred_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    """Build every vector graph a fill dropped (this run's, or one a killed run left), then forget it; their names."""
    rebuilt = []
    for name, definition in conn.execute("SELECT name, definition FROM medrag_deferred_index ORDER BY name"
                                         ).fetchall():
        with conn.transaction():
            conn.execute(definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
            conn.execute("DELETE FROM medrag_deferred_index WHERE name = %s", (name,))
        rebuilt.append(name)
    return rebuilt


def combine_stats(parts: list[EmbedStats]) -> EmbedStats:
    """One EmbedStats for shards that ran side by side: counts and seconds add up, and so do the rates."""
    return EmbedStats(
        reused=sum(part.reused for part in parts),
        embedded=sum(part.embedded for part in parts),
        seconds_encode=sum(part.seconds_encode for part in parts),
        seconds_write=sum(part.seconds_write for part in parts),
        chunks_per_second=sum(part.chunks_per_second for part in parts),
        seconds_index=sum(part.seconds_index for part in parts),
        seconds_starved=sum(part.seconds_starved for part in parts),
        model=next((part.model for part in parts if part.model), ""),
    )
