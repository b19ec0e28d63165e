"""Analyst SQL surface: views over current data, hybrid search functions, the medrag_reader role.

The SQL lives in sql/*.sql (every statement CREATE OR REPLACE / IF NOT EXISTS); a later change to those files ships
with a migration that runs them again.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

from medrag.core.migrate import run_sql_files

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

VIEWS = ("v_hcpcs_history", "v_icd10cm_history", "v_release_history", "v_lcd_hcpcs", "v_ncd_current",
         "v_icd10cm_current", "v_hcpcs_current", "v_chunk")


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS document_title_trgm ON document USING gin (lower(title) gin_trgm_ops)")
    run_sql_files("views.sql", "search.sql", "roles.sql")


def downgrade() -> None:
    # The role is cluster-wide and may hold grants in other databases: only this database's grants go here.
    op.execute("""
        DO $$ BEGIN
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'medrag_reader') THEN
                EXECUTE 'REVOKE ALL ON SCHEMA public FROM medrag_reader';
                EXECUTE 'DROP OWNED BY medrag_reader';
            END IF;
        END $$""")
    # Functions of this revision and of later ones that re-run sql/search.sql (their downgrades leave them here).
    for function in ("medrag_search_text(text, integer, jsonb)", "medrag_search(vector, text, integer, jsonb)",
                     "medrag_text_query(text)", "medrag_text_queries(text, integer)", "medrag_refresh_terms()",
                     "medrag_query_intent(text)", "medrag_nearest(vector, integer, jsonb)",
                     "medrag_nearest_in(text, vector, integer, jsonb)", "medrag_source_wanted(text, jsonb)",
                     "medrag_query_identifiers(text)", "medrag_document_matches(document, text, jsonb)",
                     "medrag_document_matches(text, text, boolean, date, date, jsonb, text, jsonb)",
                     "medrag_code_fit(medrag_code_wording, text, text[], text)"):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.execute("DROP TABLE IF EXISTS medrag_synonym")
    op.execute("DROP TABLE IF EXISTS medrag_term")
    op.execute("DROP TABLE IF EXISTS medrag_word")
    op.execute("DROP TABLE IF EXISTS medrag_source_size")
    op.execute("DROP TABLE IF EXISTS medrag_code_wording")
    op.execute("DROP INDEX IF EXISTS document_key")
    for view in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
    op.execute("DROP INDEX IF EXISTS document_title_trgm")
