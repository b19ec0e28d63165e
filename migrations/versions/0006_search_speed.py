"""Faster, typo-tolerant search: an inlinable filter function, corpus term counts, bounded full-text matching.

Drops the whole-row filter function that the planner could not inline and adds medrag_term (lexeme counts of the
current chunks) and medrag_word (the corpus words a misspelt query word is corrected to, with a trigram index).
medrag_refresh_terms (sql/search.sql) fills both after every refresh that changes documents.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# medrag_term: each lexeme of the current chunks with the number of chunks holding it (to match on the rarer words
# only); medrag_word: the plain words (not stop words, in two chunks or more) a misspelt query word is corrected to.
# IF NOT EXISTS: a database migrated by an older medrag got these from sql/search.sql, at whichever revision first
# ran that file.
TERM_TABLES = """
CREATE TABLE IF NOT EXISTS medrag_term (
    lexeme text PRIMARY KEY,
    ndoc integer NOT NULL
);
CREATE TABLE IF NOT EXISTS medrag_word (
    word text PRIMARY KEY,
    ndoc integer NOT NULL
);
CREATE INDEX IF NOT EXISTS medrag_word_trgm ON medrag_word USING gin (word gin_trgm_ops);
"""


def upgrade() -> None:
    # functions sql/search.sql no longer defines: a database that had them keeps them otherwise
    op.execute("DROP FUNCTION IF EXISTS medrag_document_matches(document, text, jsonb)")
    op.execute("DROP FUNCTION IF EXISTS medrag_text_query(text)")
    op.execute(TERM_TABLES)


def downgrade() -> None:
    op.execute("DROP TABLE medrag_word")
    op.execute("DROP TABLE medrag_term")
