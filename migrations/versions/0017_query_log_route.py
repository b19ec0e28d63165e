"""query_log.route and query_log.client: which way in a question came (CLI command or HTTP route) and from whom.

Revision ID: 0017
Revises: 0016
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE query_log ADD COLUMN route text, ADD COLUMN client text")


def downgrade() -> None:
    op.execute("ALTER TABLE query_log DROP COLUMN route, DROP COLUMN client")
