"""medrag_search lists every document's best chunk before any second chunk, fused with RRF constant 20.

Ten hits now name ten documents (dev questions: hit@5 0.85 -> 0.90, MRR 0.75 -> 0.78); the answer pipeline reads a
document's other passages itself. Re-runs sql/search.sql and sql/roles.sql.

Revision ID: 0011
Revises: 0010
"""

from medrag.core.migrate import run_sql_files

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_files("search.sql", "roles.sql")


def downgrade() -> None:
    # medrag_search is re-created from today's sql/search.sql by every later upgrade: nothing to undo here.
    pass
