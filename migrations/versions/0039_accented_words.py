"""Words typed without their accents: the corpus's accented words in medrag_word, looked up by their plain letters.

People type "sjogren", "meniere" and "guillain barre"; the Tabular and the ICD-10-CM Index write "Sjögren",
"Ménière" and "Guillain-Barré", and the english configuration keeps "sjögren" and "sjogren" apart, so a term typed
in plain letters matched neither the code's description nor its Index entry. medrag_word (the corpus vocabulary)
now holds the accented words too (medrag_refresh_terms, sql/search.sql), and medrag_compounds finds the corpus words
a typed word spells without its hyphens or its accents through medrag_plain_word, indexed here. This revision adds
the accented words of the current chunks once, so a database does not wait for its next changed release.

Revision ID: 0039
Revises: 0038
"""

from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

# A word's plain letters: hyphens dropped and Latin-1 accented letters read as their base letter (both strings hold
# 28 letters, one for one). Defined here, not in sql/, because the index below is built on it.
PLAIN_WORD = """
CREATE FUNCTION medrag_plain_word(word text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT replace(translate(word, 'àáâãäåçèéêëìíîïñòóôõöøùúûüýÿ', 'aaaaaaceeeeiiiinoooooouuuuyy'), '-', '')
$$;
"""
# the vocabulary's rule as medrag_refresh_terms applies it, for accented words (known from one chunk: an accent is
# written on purpose, never a slip)
ACCENTED_WORDS = """
INSERT INTO medrag_word (word, ndoc)
SELECT word, ndoc FROM ts_stat(
    'SELECT to_tsvector(''simple'', c.text) FROM chunk c JOIN document d ON d.id = c.document_id WHERE d.is_current')
WHERE word ~ '[à-öø-ÿ]'
  AND (word ~ '^[a-zà-öø-ÿ]{4,}$' AND to_tsvector('english', word) <> ''::tsvector
       OR word ~ '^[a-zà-öø-ÿ]+(-[a-zà-öø-ÿ]+)+$')
ON CONFLICT (word) DO NOTHING
"""


def upgrade() -> None:
    op.execute(PLAIN_WORD)
    op.execute("CREATE INDEX medrag_word_plain ON medrag_word (medrag_plain_word(word)) WHERE word ~ '[^a-z]'")
    op.execute("DROP INDEX medrag_word_joined")
    op.execute(ACCENTED_WORDS)
    op.execute("ANALYZE medrag_word")


def downgrade() -> None:
    op.execute("DELETE FROM medrag_word WHERE word ~ '[à-öø-ÿ]'")
    op.execute("CREATE INDEX medrag_word_joined ON medrag_word (replace(word, '-', '')) WHERE word LIKE '%-%'")
    op.execute("DROP INDEX medrag_word_plain")
    op.execute("DROP FUNCTION medrag_plain_word(text)")
