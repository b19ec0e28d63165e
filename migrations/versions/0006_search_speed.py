"""Faster, typo-tolerant search: an inlinable filter function, corpus term counts, bounded full-text matching.

Drops the whole-row filter function that the planner could not inline, adds medrag_term (lexeme counts of the
current chunks) and re-runs sql/search.sql and sql/roles.sql, then fills medrag_term from what is loaded.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

from medrag.core.migrate import run_sql_files

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS medrag_document_matches(document, text, jsonb)")
    op.execute("DROP FUNCTION IF EXISTS medrag_text_query(text)")
    run_sql_files("search.sql", "roles.sql")
    op.execute("SELECT medrag_refresh_terms()")


def downgrade() -> None:
    # Nothing to undo on its own: medrag_search now needs what this revision added, so those objects stay until
    # revision 0005's downgrade removes the whole search surface.
    pass
