"""embedding_model_word: the words each embedding model knows whole (medrag.index.model_words), read by
medrag_known_word so a real word the corpus never uses is not spelling-corrected; embedding_model.whole_words says
how many were stored (NULL: not yet; the next refresh's embedding stage stores them, even with nothing to embed).

Revision ID: 0033
Revises: 0032
"""

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE embedding_model_word (
        word text NOT NULL,
        model_id smallint NOT NULL REFERENCES embedding_model (id) ON DELETE CASCADE,
        PRIMARY KEY (word, model_id)
    )
    """)
    op.execute("ALTER TABLE embedding_model ADD COLUMN whole_words integer")


def downgrade() -> None:
    op.execute("ALTER TABLE embedding_model DROP COLUMN whole_words")
    op.execute("DROP TABLE embedding_model_word")
