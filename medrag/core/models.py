"""SQLAlchemy 2 models of the core tables (releases, raw files, documents, chunks, query log)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from medrag.core.registry import CODE_GROUP, vector_graphs

EMBEDDING_DIM = 384
# Full-text configuration used by the generated tsvector column and by queries; both must agree.
TEXT_SEARCH_CONFIG = "english"


class Base(DeclarativeBase):
    """Declarative base for medrag's tables."""


class Release(Base):
    """One quarterly (or yearly) release of one source, with its provenance and load status."""

    __tablename__ = "release"
    __table_args__ = (
        UniqueConstraint("source", "label"),
        Index("release_one_current_per_source", "source", unique=True, postgresql_where=text("is_current")),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(Text)
    label: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, server_default="pending")
    is_current: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    fetched_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    loaded_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    status_detail: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    # the source's SourceSpec.documents_format when its documents were built (NULL: before formats were recorded); a
    # refresh rebuilds the documents of a release built by an older format
    documents_format: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    raw_files: Mapped[list[RawFile]] = relationship(back_populates="release", cascade="all, delete-orphan")


class RawFile(Base):
    """A downloaded file of a release: where it came from and what its bytes hash to."""

    __tablename__ = "raw_file"
    __table_args__ = (UniqueConstraint("release_id", "url"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("release.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    final_url: Mapped[str | None] = mapped_column(Text)
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(Text)
    bytes: Mapped[int] = mapped_column(BigInteger)
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(Text)
    fetched_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    release: Mapped[Release] = relationship(back_populates="raw_files")


class Document(Base):
    """A retrievable text unit (an NCD, an LCD, an IOM section, one code) of one release."""

    __tablename__ = "document"
    __table_args__ = (
        UniqueConstraint("release_id", "source", "key", "version"),
        Index("document_source_key", "source", "key"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("release.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(Text)
    key: Mapped[str] = mapped_column(Text)
    version: Mapped[str] = mapped_column(Text, server_default="")
    title: Mapped[str] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text)
    effective_date: Mapped[dt.date | None] = mapped_column(Date)
    termination_date: Mapped[dt.date | None] = mapped_column(Date)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, server_default=text("'{}'::jsonb"))
    content_hash: Mapped[str] = mapped_column(Text)
    is_current: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))

    chunks: Mapped[list[Chunk]] = relationship(back_populates="document", cascade="all, delete-orphan")


# HNSW build settings of each vector graph: ICD-10-CM's near-duplicate descriptions need a denser one (migration
# 0010); the code group's graph, which holds them, is sparser but built with a longer candidate list, as complete and
# cheaper to search (migration 0035)
DEFAULT_HNSW_BUILD = {"m": 16, "ef_construction": 200}
HNSW_BUILD = {"icd10cm": {"m": 24, "ef_construction": 400}, CODE_GROUP: {"m": 12, "ef_construction": 800}}


class Chunk(Base):
    """A piece of a document sized for the embedding model, with its full-text index (its vector: ChunkVector)."""

    __tablename__ = "chunk"
    __table_args__ = (
        UniqueConstraint("document_id", "ordinal"),
        Index("chunk_tsv_gin", "tsv", postgresql_using="gin"),
        # policy documents only (migration 0021): an answer's boilerplate probes (medrag.answer.scoring)
        Index("chunk_policy_tsv_gin", "tsv", postgresql_using="gin",
              postgresql_where=text("source <> ALL ('{hcpcs,icd10cm}'::text[])")),
        Index("chunk_content_hash", "content_hash"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("document.id", ondelete="CASCADE"))
    # the document's source, set on insert by a trigger (migration 0009): chunk_vector's graphs are per source
    source: Mapped[str] = mapped_column(Text)
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    heading: Mapped[str | None] = mapped_column(Text)
    section: Mapped[str | None] = mapped_column(Text)
    page_start: Mapped[int | None] = mapped_column(Integer)
    page_end: Mapped[int | None] = mapped_column(Integer)
    # what the vector is computed from when it is not heading + text (medrag.index.embedding.EMBED_TEXT_SQL)
    embedding_text: Mapped[str | None] = mapped_column(Text)
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR,
        Computed(f"to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(heading, '') || ' ' || text)", persisted=True),
    )
    content_hash: Mapped[str] = mapped_column(Text)

    document: Mapped[Document] = relationship(back_populates="chunks")


class ChunkVector(Base):
    """A chunk's vector, in a narrow table of its own: a bulk fill is a COPY of new rows, not UPDATEs of chunk."""

    __tablename__ = "chunk_vector"
    __table_args__ = tuple(
        # a graph per document kind (migrations 0009, 0020) and one per search group over its kinds (migration 0034):
        # medrag_nearest searches each group's graph, or each kind's when the filters name kinds
        Index(
            f"chunk_vector_{name}_hnsw",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with=HNSW_BUILD.get(name, DEFAULT_HNSW_BUILD),
            postgresql_ops={"embedding": "vector_cosine_ops"},
            # PostgreSQL keeps a one-kind list as source = 'ncd', a longer one as source = ANY (ARRAY[...])
            postgresql_where=text("source IN ({})".format(", ".join(f"'{kind}'" for kind in kinds))),
        )
        for name, kinds in vector_graphs().items()
    )

    chunk_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("chunk.id", ondelete="CASCADE"), primary_key=True)
    # the chunk's source, written with the vector: each source's graph is a partial index on it
    source: Mapped[str] = mapped_column(Text)
    # the model and backend that made the vector; NULL when none is recorded (the stage embeds it again)
    model_id: Mapped[int | None] = mapped_column(SmallInteger, ForeignKey("embedding_model.id"))
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM))


class EmbeddingModel(Base):
    """A model and backend that made chunk vectors: the same (name, digest, backend, export) makes the same vectors."""

    __tablename__ = "embedding_model"
    __table_args__ = (UniqueConstraint("name", "digest", "backend", "export_format"),)

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(Text)
    backend: Mapped[str] = mapped_column(Text)
    # how an ONNX backend's graph was exported and quantised (medrag.index.onnx_model.EXPORT_FORMAT); '' for torch
    export_format: Mapped[str] = mapped_column(Text, server_default=text("''"))
    dimension: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # how many of its words embedding_model_word holds (medrag.index.model_words); NULL: not stored yet
    whole_words: Mapped[int | None] = mapped_column(Integer)


class EmbeddingModelWord(Base):
    """A word an embedding model has as one token of its own: a real word, never spelling-corrected."""

    __tablename__ = "embedding_model_word"

    word: Mapped[str] = mapped_column(Text, primary_key=True)
    model_id: Mapped[int] = mapped_column(SmallInteger, ForeignKey("embedding_model.id", ondelete="CASCADE"),
                                          primary_key=True)


class DeferredIndex(Base):
    """A vector-graph index dropped for a bulk fill, with the statement that rebuilds it (medrag.index.embedding)."""

    __tablename__ = "medrag_deferred_index"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    definition: Mapped[str] = mapped_column(Text)
    deferred_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class QueryLog(Base):
    """Audit row for every search/ask: what was asked, retrieved, accepted, refused, and how long it took."""

    __tablename__ = "query_log"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    command: Mapped[str] = mapped_column(Text)
    # The HTTP route ("POST /ask") and the client address when the question came through `medrag serve`.
    route: Mapped[str | None] = mapped_column(Text)
    client: Mapped[str | None] = mapped_column(Text)
    question: Mapped[str | None] = mapped_column(Text)
    question_hash: Mapped[str | None] = mapped_column(Text)
    filters: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    retrieved: Mapped[list[Any]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    threshold: Mapped[float | None] = mapped_column(Float)
    accepted: Mapped[list[Any]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    rejected: Mapped[list[Any]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    model: Mapped[str | None] = mapped_column(Text)
    refused: Mapped[bool | None] = mapped_column(Boolean)
    refusal_reason: Mapped[str | None] = mapped_column(Text)
    validation: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    timings_ms: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
