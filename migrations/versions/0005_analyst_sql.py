"""Analyst SQL surface: views over current data, hybrid search functions, the medrag_reader role.

The views, functions and role live in sql/*.sql (every statement CREATE OR REPLACE), applied by
medrag.schema.migrate after the revisions whenever they change. This revision holds what they need of the schema:
medrag_synonym (abbreviations and synonyms added to the full-text query) and a trigram index on document titles.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# IF NOT EXISTS: a database migrated by an older medrag got this table from sql/search.sql, at whichever revision
# first ran that file. Filled from medrag/data/code_synonyms.csv by every refresh.
SYNONYM_TABLE = """
CREATE TABLE IF NOT EXISTS medrag_synonym (
    term text NOT NULL,
    expansion text NOT NULL,
    PRIMARY KEY (term, expansion)
)"""


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS document_title_trgm ON document USING gin (lower(title) gin_trgm_ops)")
    op.execute(SYNONYM_TABLE)


def downgrade() -> None:
    op.execute("DROP TABLE medrag_synonym")
    op.execute("DROP INDEX document_title_trgm")
