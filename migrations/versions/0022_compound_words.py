"""Joined and hyphenated spellings of one word: hyphenated corpus words in medrag_word, looked up by their letters.

People type "checkup", "xray" and "handheld"; CMS and the ICD-10-CM Index write "check-up", "x-ray" and
"hand-held", which PostgreSQL's parser keeps as one hyphenated token. medrag_word (the corpus vocabulary) now holds
the hyphenated words too, and medrag_compounds (sql/search.sql) finds the ones a typed word spells without its
hyphens, through this index. medrag_refresh_terms refills the vocabulary after every refresh; this revision adds the
hyphenated words of the current chunks once, so a database does not wait for its next changed release.

Revision ID: 0022
Revises: 0021
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# the vocabulary's rule as medrag_refresh_terms applies it (in two chunks or more), for hyphenated words
HYPHENATED_WORDS = """
INSERT INTO medrag_word (word, ndoc)
SELECT word, ndoc FROM ts_stat(
    'SELECT to_tsvector(''simple'', c.text) FROM chunk c JOIN document d ON d.id = c.document_id WHERE d.is_current')
WHERE ndoc >= 2 AND word ~ '^[a-z]+(-[a-z]+)+$'
ON CONFLICT (word) DO NOTHING
"""


def upgrade() -> None:
    op.execute("CREATE INDEX medrag_word_joined ON medrag_word (replace(word, '-', '')) WHERE word LIKE '%-%'")
    op.execute(HYPHENATED_WORDS)
    op.execute("ANALYZE medrag_word")


def downgrade() -> None:
    op.execute("DROP INDEX medrag_word_joined")
    op.execute("DELETE FROM medrag_word WHERE word LIKE '%-%'")
