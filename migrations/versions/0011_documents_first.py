"""medrag_search lists every document's best chunk before any second chunk, fused with RRF constant 20.

Ten hits now name ten documents (dev questions: hit@5 0.85 -> 0.90, MRR 0.75 -> 0.78); the answer pipeline reads a
document's other passages itself. The change is in sql/search.sql: no DDL.

Revision ID: 0011
Revises: 0010
"""

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # the search functions are repeatable scripts (sql/search.sql), applied after the revisions


def downgrade() -> None:
    pass  # the upgrade changed no schema
