"""What a Neoplasm Table cell is reached through only by a subterm's reference, kept apart (icd10cm_index_entry).

A subterm that sends the reader to a whole column of the Neoplasm Table ("Argentaffinoma > malignant - see Neoplasm,
malignant, by site") makes its words an alias of every cell of that column, beside the main terms' ("Argentaffinoma -
see Neoplasm, uncertain behavior, by site"). A term that says only "argentaffinoma of antrum" then shares as many
words with the Malignant Primary cell as with the Uncertain Behavior one, which its main term names. subterm_text holds
the words a cell's column gets only from subterms (not from a main term, its path or the column's name), and the
Index lookup ranks, among cells that match alike, the one that shares fewer of them with the term first. Rows loaded
before this revision have none until their release is loaded again.

Revision ID: 0044
Revises: 0043
"""

from alembic import op

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE icd10cm_index_entry ADD COLUMN subterm_text text, "
               "ADD COLUMN subterm_lexemes text[] "
               "GENERATED ALWAYS AS (tsvector_to_array(to_tsvector('english', coalesce(subterm_text, '')))) STORED")


def downgrade() -> None:
    op.execute("ALTER TABLE icd10cm_index_entry DROP COLUMN subterm_lexemes, DROP COLUMN subterm_text")
