"""Code wording for search: medrag_code_wording and the fit leg and nearest-group leader of medrag_search.

Lay descriptions of codes ("underactive thyroid") found the right code's siblings first: the vector and text legs
cannot tell "Hypothyroidism, unspecified" from "Congenital hypothyroidism without goiter". medrag_code_wording holds
each code document's description lexemes (filler removed), HCPCS short description, and default/header flags;
medrag_search ranks the code candidates by how much of that wording the query explains (the fit leg), and, when the
query names no intent, lets the group whose nearest chunk is closer lead. Re-runs sql/search.sql and sql/roles.sql
and fills the new table.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

from medrag.core.migrate import run_sql_files

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_files("search.sql", "roles.sql")
    op.execute("SELECT medrag_refresh_terms()")


def downgrade() -> None:
    # medrag_search (re-created from sql/search.sql) now reads the table: it goes with revision 0005's downgrade.
    pass
