"""A HCPCS description's "without" clause says what the item lacks, read as a Tabular one is, in every code release.

"Hospital bed, variable height, hi-lo, with any type side rails, without mattress" (E0256) does not hold a mattress,
but only ICD-10-CM wordings had their "without" clause read (medrag_code_term.negated), so E0256 covered a term's
"mattress" as much as E0255 "..., with mattress" does, and a term that asked for the mattress did not contradict it.
589 descriptions of January 2025 say "without" (side rails, mattress, adhesive border, joints, contrast); 206 of them
"with or without", which says nothing is absent (0042). Each code release's HCPCS wordings are read when the release is
loaded (medrag_refresh_code_details) and, for those loaded before, here.

Revision ID: 0043
Revises: 0042
"""

from alembic import op
from medrag.migrations import earlier_revision

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None


SERVICE_WITHOUT = r"""
CREATE FUNCTION medrag_write_service_without_clauses(code_release integer)
RETURNS integer
LANGUAGE sql
AS $$
    WITH written AS (
        UPDATE medrag_code_term t SET negated = nullif(medrag_without_lexemes(t.text), '{}')
        FROM medrag_code_detail d
        WHERE t.release_id = code_release AND d.release_id = t.release_id AND d.code = t.code
          AND d.kind <> 'diagnosis' AND t.text ~* 'without'
        RETURNING 1
    )
    SELECT count(*)::integer FROM written
$$
"""

# the refresh the loaders (and psql) call: 0036's, then the HCPCS wordings' "without" clauses
REFRESH = r"""
CREATE OR REPLACE FUNCTION medrag_refresh_code_details(code_release integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    written integer;
BEGIN
    written := medrag_write_code_details(code_release);
    PERFORM medrag_refresh_side_defaults(code_release);
    PERFORM medrag_write_service_without_clauses(code_release);
    RETURN written;
END
$$
"""
OLD_REFRESH = earlier_revision("0036_side_defaults_and_without_clauses.py").REFRESH.replace(
    "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def upgrade() -> None:
    op.execute(SERVICE_WITHOUT)
    op.execute(REFRESH)
    op.execute("SELECT medrag_write_service_without_clauses(id) FROM release WHERE source = 'hcpcs' ORDER BY id")
    op.execute("ANALYZE medrag_code_term")


def downgrade() -> None:
    op.execute(OLD_REFRESH)
    op.execute("DROP FUNCTION medrag_write_service_without_clauses(integer)")
    op.execute("UPDATE medrag_code_term t SET negated = NULL FROM medrag_code_detail d "
               "WHERE d.release_id = t.release_id AND d.code = t.code AND d.kind <> 'diagnosis'")
