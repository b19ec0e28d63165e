"""An HNSW index per document source instead of one over every chunk; medrag_nearest searches them.

medrag_search ranks the code group (HCPCS, ICD-10-CM: 82% of the chunks) and the policy group (NCDs, LCDs, Articles,
manuals) apart. With one index, the policy group got only what was left of the nearest 280 chunks after the codes,
and a source filter (NCDs only) made the scan skip nearly every row it visited: medrag_search fell back on exact
distances over the source's chunks, 100+ ms at 300k chunks. chunk.source (the document's source, set by a trigger
on insert) lets each source have a partial index of its own: medrag_nearest takes each group's nearest chunks from
its sources' graphs, and a source filter scans only that source's graph.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SOURCES = ("ncd", "lcd", "article", "iom", "hcpcs", "icd10cm")
HNSW = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)"
SOURCE_INDEXES = tuple(f"CREATE INDEX chunk_embedding_{source}_hnsw ON chunk {HNSW} WHERE source = '{source}'"
                       for source in SOURCES)
CHUNK_SOURCE_TRIGGER = """
CREATE OR REPLACE FUNCTION medrag_chunk_source() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.source := (SELECT d.source FROM document d WHERE d.id = NEW.document_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER chunk_source BEFORE INSERT OR UPDATE OF document_id ON chunk
FOR EACH ROW EXECUTE FUNCTION medrag_chunk_source();
"""


def upgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")  # the graphs are built in memory: much faster
    # Dropped first: updating every row would otherwise insert each vector into the old graph again.
    op.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    op.execute("ALTER TABLE chunk ADD COLUMN source text")
    op.execute("UPDATE chunk c SET source = d.source FROM document d WHERE d.id = c.document_id")
    op.execute("ALTER TABLE chunk ALTER COLUMN source SET NOT NULL")
    op.execute(CHUNK_SOURCE_TRIGGER)
    for statement in SOURCE_INDEXES:
        op.execute(statement)
    # chunks per source told medrag_search when a source filter was narrow enough for exact distances: no longer.
    # IF EXISTS: a database migrated by an older medrag may never have had it (its sql/search.sql made the tables).
    op.execute("DROP TABLE IF EXISTS medrag_source_size")
    op.execute("ANALYZE chunk")


def downgrade() -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for source in SOURCES:
        op.execute(f"DROP INDEX chunk_embedding_{source}_hnsw")
    op.execute("DROP TRIGGER chunk_source ON chunk")
    op.execute("DROP FUNCTION medrag_chunk_source()")
    op.execute("ALTER TABLE chunk DROP COLUMN source")
    op.execute("CREATE INDEX chunk_embedding_hnsw ON chunk USING hnsw (embedding vector_cosine_ops) "
               "WITH (m = 16, ef_construction = 200)")
    op.execute("CREATE TABLE medrag_source_size (source text PRIMARY KEY, chunks integer NOT NULL)")
