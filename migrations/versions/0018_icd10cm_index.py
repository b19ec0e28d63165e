"""icd10cm_index_entry: the ICD-10-CM Index (diseases, external causes, drug and neoplasm tables) as rows.

One row per code an index term gives (per filled cell for table rows), with its path, modifiers, resolved
cross-references and aliases; search_text is what the code finder's index leg matches (full text and trigram).

Revision ID: 0018
Revises: 0017
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE icd10cm_index_entry (
    release_id integer NOT NULL REFERENCES release(id) ON DELETE CASCADE,
    index_name text NOT NULL CHECK (index_name IN ('diseases', 'external_causes', 'drugs', 'neoplasms')),
    entry_id integer NOT NULL,
    parent_id integer,
    level integer NOT NULL,
    title text NOT NULL,
    nemod text,
    path text[] NOT NULL,
    column_name text,
    code text,
    see text,
    see_also text,
    see_entry_id integer,
    aliases text[],
    search_text text NOT NULL,
    core_text text NOT NULL,
    source_file text NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED,
    core_lexemes text[] GENERATED ALWAYS AS (tsvector_to_array(to_tsvector('english', core_text))) STORED
)""")
    op.execute("CREATE UNIQUE INDEX icd10cm_index_entry_key ON icd10cm_index_entry "
               "(release_id, index_name, entry_id, coalesce(column_name, ''))")
    op.execute("CREATE INDEX icd10cm_index_entry_search ON icd10cm_index_entry USING gin (search_vector) "
               "WHERE code IS NOT NULL")
    op.execute("CREATE INDEX icd10cm_index_entry_trigram ON icd10cm_index_entry USING gin (search_text gin_trgm_ops) "
               "WHERE code IS NOT NULL")
    op.execute("CREATE INDEX icd10cm_index_entry_code ON icd10cm_index_entry (release_id, code)")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_icd10cm_index, v_icd10cm_drug, v_icd10cm_neoplasm")
    op.execute("DROP TABLE icd10cm_index_entry")
