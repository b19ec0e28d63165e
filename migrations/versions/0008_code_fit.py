"""Code wording for search: medrag_code_wording and the fit leg and nearest-group leader of medrag_search.

Lay descriptions of codes ("underactive thyroid") found the right code's siblings first: the vector and text legs
cannot tell "Hypothyroidism, unspecified" from "Congenital hypothyroidism without goiter". medrag_code_wording holds
each code document's description lexemes (filler removed), HCPCS short description, and default/header flags;
medrag_search ranks the code candidates by how much of that wording the query explains (the fit leg), and, when the
query names no intent, lets the group whose nearest chunk is closer lead. medrag_refresh_terms (sql/search.sql)
fills the table after every refresh that changes documents.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The wording of each code document, as the lexemes medrag_search's fit leg compares with a query's: the description
# without filler ("unspecified", "NOS", "without complications" say what is not known), the HCPCS short description,
# whether the description says "other" (something the query did not ask for), whether the code is an ICD-10-CM
# default ("unspecified" / NOS / "without complications"), whether it is a non-billable header and whether it is a
# HCPCS reporting code (quality measures, functional limitations: not an item or a service).
# IF NOT EXISTS: a database migrated by an older medrag got this table from sql/search.sql, at whichever revision
# first ran that file.
CODE_WORDING_TABLE = """
CREATE TABLE IF NOT EXISTS medrag_code_wording (
    document_id bigint PRIMARY KEY REFERENCES document (id) ON DELETE CASCADE,
    title_lexemes text[] NOT NULL,
    short_lexemes text[] NOT NULL,
    says_other boolean NOT NULL,
    is_default boolean NOT NULL,
    is_header boolean NOT NULL,
    is_measure boolean NOT NULL
)"""


def upgrade() -> None:
    op.execute(CODE_WORDING_TABLE)


def downgrade() -> None:
    op.execute("DROP TABLE medrag_code_wording")
