"""medrag_search puts the other group's first document fourth, not second, when the leading group is sure.

The lead is sure when the query says what it wants (code or coverage words) or one group's nearest chunk is nearer
by 0.1 or more: the lead was right for every such dev (40) and holdout (21) question. Dev MRR 0.794 -> 0.808,
holdout hit@5 0.875 -> 0.896. Re-runs sql/search.sql and sql/roles.sql.

Revision ID: 0013
Revises: 0012
"""

from medrag.migrate import run_sql_files

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_files("search.sql", "roles.sql")


def downgrade() -> None:
    # medrag_search is re-created from today's sql/search.sql by every later upgrade: nothing to undo here.
    pass
