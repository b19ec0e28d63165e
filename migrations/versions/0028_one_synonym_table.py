"""medrag_synonym holds the one synonym table, every row of medrag/data/synonyms.csv with what each reader needs.

Before, it held only the full-text query's (term, expansion) pairs, written by every refresh, while the code finder
read a second copy rendered into a function. Now each row keeps its place in the file, its term as written, kind,
systems and how it expands code documents, and the term as the full-text query splits a query (search_term).
The rows are written by generated.sql (medrag/codes/synonyms.py renders them from medrag/core/synonyms.py), which
also defines each reader's view of them (medrag_search_synonym, medrag_finder_synonym). The old rows are dropped:
the scripts, applied after this revision, write the new ones.

Revision ID: 0028
Revises: 0027
"""

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

SYNONYM_TABLE = """
CREATE TABLE medrag_synonym (
    position integer PRIMARY KEY,
    term text NOT NULL,
    expansion text NOT NULL,
    kind text NOT NULL,
    systems text[] NOT NULL,
    documents text NOT NULL CHECK (documents IN ('', 'any_case', 'exact')),
    -- lower case, runs of anything but letters and digits one space: how medrag_text_queries writes a query's words
    search_term text GENERATED ALWAYS AS (btrim(regexp_replace(lower(term), '[^a-z0-9]+', ' ', 'g'))) STORED
)"""

OLD_SYNONYM_TABLE = """
CREATE TABLE medrag_synonym (
    term text NOT NULL,
    expansion text NOT NULL,
    PRIMARY KEY (term, expansion)
)"""


def upgrade() -> None:
    op.execute("DROP TABLE medrag_synonym")
    op.execute(SYNONYM_TABLE)


def downgrade() -> None:
    op.execute("DROP TABLE medrag_synonym")
    op.execute(OLD_SYNONYM_TABLE)  # empty until a refresh of the older medrag writes its pairs
