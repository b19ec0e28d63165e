"""medrag_code_cache keeps each answer's call (its arguments and the settings it ran under), so a refresh can ask the
recent calls again on the new data (medrag_code_cache_stale, `medrag db warm`) before users do.

Rows kept before this revision have no call and are never asked again; they age out as before.

Revision ID: 0032
Revises: 0031
"""

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    ALTER TABLE medrag_code_cache
        ADD COLUMN systems text[],
        ADD COLUMN release_label text,
        ADD COLUMN top integer,
        ADD COLUMN query_embedding vector,  -- the dimension is the embedding model's, as in chunk_vector
        ADD COLUMN settings_hash text  -- medrag_code_cache_settings() when kept; NULL: kept before 0032
    """)


def downgrade() -> None:
    op.execute("""
    ALTER TABLE medrag_code_cache
        DROP COLUMN systems, DROP COLUMN release_label, DROP COLUMN top, DROP COLUMN query_embedding,
        DROP COLUMN settings_hash
    """)
