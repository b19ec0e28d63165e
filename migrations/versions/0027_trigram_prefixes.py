"""The trigram legs compare a query with the first 256 characters of a title or HCPCS description.

A trigram leg keeps the titles (medrag_trigram_leg) or HCPCS long descriptions (medrag_code_trigram_leg) that hold
most of the query's trigrams in one stretch (word_similarity). The quality-measure G codes' descriptions run to
4,500 characters: they hold most of any short query's trigrams somewhere, so the lossy trigram index returns them for
nearly every query, and word_similarity over each costs a fraction of a millisecond before turning it down, most of
the search statement's time for a misspelt question. Their first 256 characters say what the code is; every
ICD-10-CM title (at most 206 characters), NCD and LCD title is whole within them. A title cut inside a word gains at
most that word's end trigram. The indexes below cover the prefix both legs now compare. The titles' index of the
whole text (revision 0005) goes, as nothing else reads it; the HCPCS descriptions' (revision 0024) stays, for the
word leg's ILIKE patterns.

Revision ID: 0027
Revises: 0026
"""

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX document_title_prefix_trgm ON document USING gin (lower(left(title, 256)) gin_trgm_ops)")
    op.execute("DROP INDEX document_title_trgm")
    op.execute("CREATE INDEX hcpcs_code_release_description_prefix_trgm ON hcpcs_code "
               "USING gin (release_id, left(long_description, 256) gin_trgm_ops)")
    op.execute("ANALYZE document")
    op.execute("ANALYZE hcpcs_code")


def downgrade() -> None:
    op.execute("DROP INDEX hcpcs_code_release_description_prefix_trgm")
    op.execute("CREATE INDEX document_title_trgm ON document USING gin (lower(title) gin_trgm_ops)")
    op.execute("DROP INDEX document_title_prefix_trgm")
