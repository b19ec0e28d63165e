"""The negations ICD-10-CM states itself, kept per release for the code finder.

"Galactorrhea not associated with childbirth" (N64.3), "Do not resuscitate" (Z66), "..., not intractable" and the
Index's level "Immunization > not done" are the codes' own wording, not a user's denial. The code finder reads a
term's "not ..." as such a wording when its clause starts the way one the Tabular or the Index states does
(medrag_stated_clause, medrag/codes/terms.py). This table holds each release's stated clauses, [cue, words], which
medrag_write_stated_negations (rendered from the same negation pattern as the term's reading) writes when a release
is loaded and when that pattern changes; a lookup by cue and first word answers a term in a fraction of a
millisecond, where reading the descriptions took ten.

Revision ID: 0037
Revises: 0036
"""

from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE icd10cm_stated_negation (
            release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
            cue text NOT NULL,
            words text[] NOT NULL,
            PRIMARY KEY (release_id, cue, words)
        )""")
    op.execute("CREATE INDEX icd10cm_stated_negation_first_word ON icd10cm_stated_negation (cue, (words[1]))")


def downgrade() -> None:
    op.execute("DROP TABLE icd10cm_stated_negation")
