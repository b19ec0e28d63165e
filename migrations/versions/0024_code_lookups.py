"""The code finder's lookups read one release: its description words (medrag_code_word) and its trigram index.

Spelling. The code finder corrects a word that no code of a release holds to a word of that release's descriptions:
among the words similar by trigrams, the fewest edits away (fuzzystrmatch's levenshtein), then the commonest.
Reading the descriptions for it (every description like the word, then their words) cost up to a third of a second
for a word like "unspecifed", which thousands of descriptions resemble; the release's distinct words (about 7,000)
with a trigram index answer in a millisecond or two. The ICD-10-CM and HCPCS loaders write a release's words as they
load it (medrag_refresh_code_words, sql/search.sql); this revision fills them once for the releases already loaded.

Word and trigram legs. The descriptions' trigram indexes now lead with the release (btree_gin), so a lookup in one
release reads that release's matches, not those of every release loaded (three ICD-10-CM releases here, one more a
year in production). A condition on the description alone still uses them.

Revision ID: 0024
Revises: 0023
"""

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

# the rule medrag_refresh_code_words applies, for every release at once
FILL = """
INSERT INTO medrag_code_word (release_id, word, ndoc)
SELECT release_id, word, count(*)
FROM (SELECT DISTINCT c.release_id, c.code, w.word
      FROM (SELECT release_id, code, description FROM icd10cm_code WHERE seventh_character IS NULL
            UNION ALL
            SELECT release_id, code, long_description FROM hcpcs_code) c
      CROSS JOIN LATERAL regexp_split_to_table(lower(c.description), '[^a-z0-9]+') AS w(word)
      WHERE length(w.word) >= 3) used
GROUP BY release_id, word
"""


# the descriptions each code table's trigram index covers (0019: a 7th-character form repeats its base code's words)
TRIGRAM_INDEXES = {"icd10cm_code": ("description", " WHERE seventh_character IS NULL"),
                   "hcpcs_code": ("long_description", "")}


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute("CREATE EXTENSION IF NOT EXISTS fuzzystrmatch")
    for table, (column, where) in TRIGRAM_INDEXES.items():
        op.execute(f"CREATE INDEX {table}_release_{column}_trgm ON {table} "
                   f"USING gin (release_id, {column} gin_trgm_ops){where}")
        op.execute(f"DROP INDEX {table}_{column}_trgm")
    op.execute("CREATE TABLE medrag_code_word (release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE, "
               "word text NOT NULL, ndoc integer NOT NULL, PRIMARY KEY (release_id, word))")
    op.execute("CREATE INDEX medrag_code_word_trgm ON medrag_code_word USING gin (release_id, word gin_trgm_ops)")
    op.execute(FILL)
    op.execute("ANALYZE medrag_code_word")


def downgrade() -> None:
    op.execute("DROP TABLE medrag_code_word")
    for table, (column, where) in TRIGRAM_INDEXES.items():
        op.execute(f"CREATE INDEX {table}_{column}_trgm ON {table} USING gin ({column} gin_trgm_ops){where}")
        op.execute(f"DROP INDEX {table}_release_{column}_trgm")
    op.execute("DROP EXTENSION btree_gin")
    op.execute("DROP EXTENSION fuzzystrmatch")
