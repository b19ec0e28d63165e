"""medrag_search: documents fused by their best chunk in each leg; named kinds and code wording steer; spelling.

- A document's place in a leg is its best chunk's: fused chunk by chunk, a determination whose nearest passage is
  not the passage its words match lost to one passage of a neighbour that both legs found (NCD 200.3 behind
  220.6.13 for a question on anti-amyloid infusions). Dev MRR 0.831 -> 0.838, holdout unchanged.
- A query that names a kind of document ("local coverage determination", "LCD", "NCD") gets that kind first in its
  group, as "HCPCS" and "diagnosis code" already did for the codes.
- A query in a code's own terms ("not further specified", "no complications") asks for the code group.
- The score a hit carries is its document's fused score, the one it is ranked by.
- medrag_spelling(query_text): the query's misspelt words and their corrections, used by medrag_text_queries and by
  the callers that embed a query (medrag search, medrag embed), which embed the corrected text.

The changes are in sql/search.sql: no DDL.

Revision ID: 0014
Revises: 0013
"""

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # the search functions are repeatable scripts (sql/search.sql), applied after the revisions


def downgrade() -> None:
    pass  # the upgrade changed no schema
