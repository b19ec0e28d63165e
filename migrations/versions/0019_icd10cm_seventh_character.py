"""icd10cm_code.seventh_character: the billable codes a 7th character makes (T39.1X1A), as rows of their own.

The Tabular lists T39.1X1 and defines the 7th characters once for category T36-T50; the loader writes each
T39.1X1A / D / S row it implies, with seventh_character set, so a code lookup, a release diff and a join find the
code that is reported. Rows loaded before this revision get theirs when their release is loaded again.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE icd10cm_code ADD COLUMN seventh_character text")
    # The code finder matches description words of the codes the Tabular lists, never of their 7th-character forms
    # ("initial encounter" is in 50,000 of those): the trigram index covers the listed codes only.
    op.execute("DROP INDEX icd10cm_code_description_trgm")
    op.execute("CREATE INDEX icd10cm_code_description_trgm ON icd10cm_code USING gin (description gin_trgm_ops) "
               "WHERE seventh_character IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX icd10cm_code_description_trgm")
    op.execute("CREATE INDEX icd10cm_code_description_trgm ON icd10cm_code USING gin (description gin_trgm_ops)")
    op.execute("ALTER TABLE icd10cm_code DROP COLUMN seventh_character")
