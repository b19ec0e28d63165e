"""Faster, typo-tolerant search: an inlinable filter function, corpus term counts, bounded full-text matching.

Drops the whole-row filter function that the planner could not inline, adds medrag_term (lexeme counts of the
current chunks) and re-runs sql/search.sql and sql/roles.sql, then fills medrag_term from what is loaded.

Revision ID: 0006
Revises: 0005
"""

from pathlib import Path

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


def upgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS medrag_document_matches(document, text, jsonb)")
    op.execute("DROP FUNCTION IF EXISTS medrag_text_query(text)")
    # today's search.sql may read columns a later revision adds (chunk.source, 0009): bodies are checked when run
    op.execute("SET LOCAL check_function_bodies = off")
    for name in ("search.sql", "roles.sql"):
        op.execute((SQL_DIR / name).read_text())
    op.execute("SELECT medrag_refresh_terms()")


def downgrade() -> None:
    # Nothing to undo on its own: medrag_search now needs what this revision added, so those objects stay until
    # revision 0005's downgrade removes the whole search surface.
    pass
