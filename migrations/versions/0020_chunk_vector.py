"""chunk_vector: each chunk's vector in a narrow table of its own, written by COPY instead of UPDATEs of chunk.

Writing a vector into the chunk row rewrote the whole row and every index on it (full text, trigram, content hash):
one connection filled about 4,000 vectors/s, the pace of the embedding stage on a GPU that makes 64,000/s. New
rows of (chunk_id, source, model_id, embedding) touch only their own primary key, and a deferred graph is built
at the end. Each document source keeps its own HNSW graph, now over chunk_vector.source (the chunk's source).

Revision ID: 0020
Revises: 0019
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The graphs as models.ChunkVector declares them (migration 0010's settings for ICD-10-CM): a migration keeps its
# own copy, since a later change to the model must not change what this revision did.
_SOURCES = ("ncd", "lcd", "article", "iom", "hcpcs", "icd10cm")
_BUILD = {"icd10cm": "m = 24, ef_construction = 400"}
_DEFAULT_BUILD = "m = 16, ef_construction = 200"


def _graph(table: str, name: str, source: str) -> str:
    return (f"CREATE INDEX {name} ON {table} USING hnsw (embedding vector_cosine_ops) "
            f"WITH ({_BUILD.get(source, _DEFAULT_BUILD)}) WHERE source = '{source}'")


def upgrade() -> None:
    op.execute("""
        CREATE TABLE chunk_vector (
            chunk_id bigint PRIMARY KEY REFERENCES chunk (id) ON DELETE CASCADE,
            source text NOT NULL,
            model_id smallint REFERENCES embedding_model (id),
            embedding vector(384) NOT NULL
        )""")
    op.execute("""
        INSERT INTO chunk_vector (chunk_id, source, model_id, embedding)
        SELECT id, source, embedding_model_id, embedding FROM chunk WHERE embedding IS NOT NULL""")
    # a graph a killed fill left dropped is built on the new table, like the others
    op.execute("DELETE FROM medrag_deferred_index")
    for source in _SOURCES:
        op.execute(f"DROP INDEX IF EXISTS chunk_embedding_{source}_hnsw")
        op.execute(_graph("chunk_vector", f"chunk_vector_{source}_hnsw", source))
    # v_chunk read the column; sql/views.sql (changed with this revision) is applied again right after
    op.execute("DROP VIEW IF EXISTS v_chunk")
    op.execute("ALTER TABLE chunk DROP COLUMN embedding, DROP COLUMN embedding_model_id")
    op.execute("ANALYZE chunk_vector")


def downgrade() -> None:
    op.execute("ALTER TABLE chunk ADD COLUMN embedding vector(384), "
               "ADD COLUMN embedding_model_id smallint REFERENCES embedding_model (id)")
    op.execute("""
        UPDATE chunk SET embedding = v.embedding, embedding_model_id = v.model_id
        FROM chunk_vector v WHERE v.chunk_id = chunk.id""")
    op.execute("DELETE FROM medrag_deferred_index")
    op.execute("DROP TABLE chunk_vector")
    for source in _SOURCES:
        op.execute(_graph("chunk", f"chunk_embedding_{source}_hnsw", source))
