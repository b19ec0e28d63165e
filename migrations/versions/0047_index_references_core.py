"""A GIN index on the core lexemes of the ICD-10-CM Index entries that refer elsewhere with a "see".

"Inflammation > esophagus - see Esophagitis" says what a phrase is called: the code finder reads a run of a term's
words that is such an entry's words as the entry it names (medrag_index_names, sql/finder_analysis.sql), so
"without inflammation of the esophagus" is "without esophagitis". The entries it asks about are the ones a term's
words hold (core_lexemes <@ the term's), about 10,500 rows of a release; the index on core_lexemes covers only rows
with a code, and many referring entries have none ("Broken > arm - see Fracture, arm").

Revision ID: 0047
Revises: 0046
"""

from alembic import op

revision = "0047"
down_revision = "0046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX icd10cm_index_entry_see_core ON icd10cm_index_entry USING gin (core_lexemes) "
               "WHERE see IS NOT NULL AND see_entry_id IS NOT NULL")
    op.execute("ANALYZE icd10cm_index_entry")


def downgrade() -> None:
    op.execute("DROP INDEX icd10cm_index_entry_see_core")
