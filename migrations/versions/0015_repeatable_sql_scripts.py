"""medrag_sql_script: which version of each repeatable SQL script (views, generated, search, roles) is applied.

medrag.schema.migrate applies those scripts after the revisions, only when a script's SHA-256 differs from the one
recorded here, so a migrate with nothing changed runs none of them.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE medrag_sql_script (
            name text PRIMARY KEY,
            sha256 text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        )""")


def downgrade() -> None:
    op.execute("DROP TABLE medrag_sql_script")
