"""icd10cm_index_column_alias: each name the Index gives a whole column of the Neoplasm Table or the Table of Drugs.

A main term that sends the reader to a column ("Cancer - see Neoplasm, by site, malignant") or a subterm that does
("Metastasis, metastatic > spread - see Neoplasm, secondary, by site") names that column: a term that says every
level of one of those names ("prostate cancer", "cancer spread to the liver") asks for that column, and the code finder
then measures a cell only on its site. One row per level of an alias and per way the level may be written (a main
term's comma-separated names: "Metastasis" or "metastatic"); lexemes are the level's words as full text reads them.
Releases loaded before this revision have none until they are loaded again.

Revision ID: 0045
Revises: 0044
"""

from alembic import op

revision = "0045"
down_revision = "0044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE icd10cm_index_column_alias (
    release_id integer NOT NULL REFERENCES release(id) ON DELETE CASCADE,
    index_name text NOT NULL CHECK (index_name IN ('drugs', 'neoplasms')),
    column_name text NOT NULL,
    alias_n integer NOT NULL,
    alias text NOT NULL,
    from_subterm boolean NOT NULL,
    level_n integer NOT NULL,
    variant text NOT NULL,
    lexemes text[] GENERATED ALWAYS AS (tsvector_to_array(to_tsvector('english', variant))) STORED,
    PRIMARY KEY (release_id, index_name, column_name, alias_n, level_n, variant)
)""")
    op.execute("COMMENT ON TABLE icd10cm_index_column_alias IS 'the names the Index gives a whole table column: one "
               "row per level of a name and per way that level may be written'")


def downgrade() -> None:
    op.execute("DROP TABLE icd10cm_index_column_alias")
