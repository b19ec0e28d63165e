"""medrag_search: the other group comes in fourth when the lead is sure; a code's fit counts by its value.

- The other group's first document was second after every lead; now it is fourth when the lead is sure: the query
  says what it wants (code or coverage words: the lead was right for 42 of 43 dev and 11 of 13 holdout questions) or
  one group's nearest chunk is nearer by 0.1 or more (right for all 40 dev and 21 holdout questions with that
  margin). Dev MRR 0.794 -> 0.808, holdout hit@5 0.875 -> 0.896.
- The fit leg adds 0.1 x the fit instead of weight 2 on its rank, so a clear fit is not flattened to a rank next to
  a close one. Dev hit@5 0.949 -> 0.963, MRR 0.808 -> 0.821; holdout hit@5 0.896 -> 0.917, MRR 0.805 -> 0.804.
- The fit is its own function, medrag_code_fit, and an HCPCS short description's share counts 3/4: it is the long
  description cut to 28 characters and may say less than the code is. Dev MRR 0.821 -> 0.830, holdout unchanged.

The changes are in sql/search.sql: no DDL.

Revision ID: 0013
Revises: 0012
"""

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # the search functions are repeatable scripts (sql/search.sql), applied after the revisions


def downgrade() -> None:
    pass  # the upgrade changed no schema
