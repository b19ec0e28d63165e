"""medrag_code_cache: the code finder's answers kept, so a term asked again costs one lookup, not a search.

medrag_find_codes_cached (sql/finder_cache.sql) keys each answer by everything it depends on (the term, the systems,
the release asked for, top, the query's embedding, this session's settings, and the version of the data: the
releases, the vectors, the SQL, the synonyms), so a refresh or a changed setting is a new key, never a stale answer.
A logged table: a streaming replica reads what the primary kept.

Revision ID: 0031
Revises: 0030
"""

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE medrag_code_cache (
        id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- the order kept: the oldest go first past code_cache_rows
        cache_key text PRIMARY KEY,  -- md5 of the call and the data version (medrag_code_cache_key)
        term text NOT NULL,
        found jsonb NOT NULL,  -- what medrag_find_codes returned
        created_at timestamptz NOT NULL DEFAULT now()
    )""")
    op.execute("COMMENT ON TABLE medrag_code_cache IS 'The code finder''s answers by call and data version "
               "(medrag_find_codes_cached); the oldest are dropped past the code_cache_rows setting.'")


def downgrade() -> None:
    op.execute("DROP TABLE medrag_code_cache")
