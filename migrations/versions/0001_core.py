"""Core tables: release, raw_file, document, chunk (pgvector + full text), query_log.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

EMPTY_OBJECT = sa.text("'{}'::jsonb")
EMPTY_ARRAY = sa.text("'[]'::jsonb")


def upgrade() -> None:
    for extension in ("vector", "pg_trgm", "unaccent"):
        op.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")

    op.create_table(
        "release",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("is_current", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("fetched_at", sa.DateTime(timezone=True)),
        sa.Column("loaded_at", sa.DateTime(timezone=True)),
        sa.Column("manifest", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        sa.Column("status_detail", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.UniqueConstraint("source", "label"),
        sa.CheckConstraint("status IN ('pending','loading','loaded','partial','failed')", name="release_status"),
    )
    op.create_index(
        "release_one_current_per_source", "release", ["source"], unique=True, postgresql_where=sa.text("is_current")
    )

    op.create_table(
        "raw_file",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("final_url", sa.Text),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.Text, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("etag", sa.Text),
        sa.Column("last_modified", sa.Text),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.UniqueConstraint("release_id", "url"),
    )

    op.create_table(
        "document",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("version", sa.Text, nullable=False, server_default=""),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("url", sa.Text),
        sa.Column("effective_date", sa.Date),
        sa.Column("termination_date", sa.Date),
        sa.Column("metadata", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("is_current", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.UniqueConstraint("release_id", "source", "key", "version"),
        sa.CheckConstraint(
            "source IN ('ncd','lcd','article','iom','hcpcs','icd10cm')", name="document_source"
        ),
    )
    op.create_index("document_source_key", "document", ["source", "key"])

    op.create_table(
        "chunk",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("document_id", sa.BigInteger, sa.ForeignKey("document.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("heading", sa.Text),
        sa.Column("section", sa.Text),
        sa.Column("page_start", sa.Integer),
        sa.Column("page_end", sa.Integer),
        sa.Column("embedding", Vector(384)),
        sa.Column(
            "tsv",
            TSVECTOR,
            sa.Computed("to_tsvector('english', coalesce(heading, '') || ' ' || text)", persisted=True),
        ),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.UniqueConstraint("document_id", "ordinal"),
    )
    op.execute(
        "CREATE INDEX chunk_embedding_hnsw ON chunk USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 16, ef_construction = 64)"
    )
    op.create_index("chunk_tsv_gin", "chunk", ["tsv"], postgresql_using="gin")
    op.create_index("chunk_content_hash", "chunk", ["content_hash"])

    op.create_table(
        "query_log",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("question", sa.Text),
        sa.Column("question_hash", sa.Text),
        sa.Column("filters", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        sa.Column("retrieved", JSONB, nullable=False, server_default=EMPTY_ARRAY),
        sa.Column("threshold", sa.Float),
        sa.Column("accepted", JSONB, nullable=False, server_default=EMPTY_ARRAY),
        sa.Column("rejected", JSONB, nullable=False, server_default=EMPTY_ARRAY),
        sa.Column("model", sa.Text),
        sa.Column("refused", sa.Boolean),
        sa.Column("refusal_reason", sa.Text),
        sa.Column("validation", JSONB, nullable=False, server_default=EMPTY_OBJECT),
        sa.Column("timings_ms", JSONB, nullable=False, server_default=EMPTY_OBJECT),
    )
    op.create_index("query_log_created_at", "query_log", ["created_at"])


def downgrade() -> None:
    for table in ("query_log", "chunk", "document", "raw_file", "release"):
        op.drop_table(table)
    # Extensions stay: other schemas in the same database may use them.
