"""The Index leg finds the entries whose core words hold a term's word through an index of its own.

An entry sharing a single word with the term ranks by the share of its core words (main term and subterms,
modifiers left out) that word is, so the entries whose core holds it come first. Reading them through the full-text
index meant reading every entry that merely mentions the word: 30,000 of the FY2025 Index's 118,000 coded entries for
a term with "leg" or "operation", 40-65 ms of a code search. A GIN index on core_lexemes finds the thousand or so
whose core holds it in a millisecond or two (medrag_code_index_leg, sql/codes.sql).

Revision ID: 0026
Revises: 0025
"""

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX icd10cm_index_entry_core ON icd10cm_index_entry USING gin (core_lexemes) "
               "WHERE code IS NOT NULL")
    op.execute("ANALYZE icd10cm_index_entry")


def downgrade() -> None:
    op.execute("DROP INDEX icd10cm_index_entry_core")
