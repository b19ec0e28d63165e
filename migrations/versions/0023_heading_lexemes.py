"""The lexemes of each ICD-10-CM chapter and block title, stored with the title.

The code finder reads a code's chapter and block titles as part of what the code says ("Injury, poisoning and certain
other consequences of external causes" for every S and T code: "knee pain, no injury" contradicts them). A
release has 22 chapters and about 300 blocks, and a lookup fetches a hundred codes or so: the titles' lexemes are
stored once, as the row is written, rather than computed for every code fetched. The title's code range and
bracketed synonyms are set aside, as for a code's own wording.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

TITLE_LEXEMES = ("ADD COLUMN title_lexemes text[] GENERATED ALWAYS AS (tsvector_to_array(to_tsvector('english', "
                 "regexp_replace(coalesce(description, ''), '\\([^)]*\\)|\\[[^]]*\\]', ' ', 'g')))) STORED")


def upgrade() -> None:
    for table in ("icd10cm_chapter", "icd10cm_section"):
        op.execute(f"ALTER TABLE {table} {TITLE_LEXEMES}")


def downgrade() -> None:
    for table in ("icd10cm_chapter", "icd10cm_section"):
        op.execute(f"ALTER TABLE {table} DROP COLUMN title_lexemes")
