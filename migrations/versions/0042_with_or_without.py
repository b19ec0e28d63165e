"""A Tabular wording that says "with or without" something says nothing is absent, re-applied to every code release.

"Penetrating wound of orbit with or without foreign body, right eye" (S05.41) holds both; medrag_without_lexemes read
its "without foreign body" as a clause saying the foreign body is absent, so the code did not cover a term's
"foreign body" and a term that said "with foreign body" contradicted it. 50 wordings of FY2026 say "with or
without" (exocervicitis "with or without erosion or ectropion", open wounds "with or without involvement of lacrimal
passages"). The Index's entries are read by the same function when the finder runs, so they follow without a
rewrite.

Revision ID: 0042
Revises: 0041
"""

from alembic import op
from medrag.migrations import earlier_revision

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


WITHOUT = r"""
CREATE OR REPLACE FUNCTION medrag_without_lexemes(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN wording ~* 'without' THEN (
        WITH read AS (
            -- "with or without X" (and "with/without X") says X may be there: read as "with X"
            SELECT regexp_replace(wording, '\mwith\s*(or|/)\s*without\M', 'with', 'gi') AS wording
        ),
        clause AS (
            -- each clause cut where "with" or "of" goes on: said is what the wording says is absent
            SELECT cut.said, substr(m[1], length(cut.said) + 1) AS rest
            FROM read, regexp_matches(read.wording, '\mwithout\s+([^,]*)', 'gi') AS m,
                 LATERAL (SELECT regexp_replace(m[1], '\s+(with|of)\M.*$', '', 'i') AS said) cut)
        SELECT coalesce(array_agg(DISTINCT lexeme), '{}')
        FROM clause, unnest(medrag_lexemes(clause.said)) AS lexeme
        WHERE lexeme <> ALL (medrag_lexemes(regexp_replace((SELECT wording FROM read), '\mwithout\s+[^,]*', ' ', 'gi')
                                            || ' ' || coalesce((SELECT string_agg(rest, ' ') FROM clause), ''))))
    ELSE '{}' END
$$
"""
OLD_WITHOUT = earlier_revision("0036_side_defaults_and_without_clauses.py").WITHOUT
REWRITE_NEGATED = ("UPDATE medrag_code_term t SET negated = nullif(medrag_without_lexemes(t.text), '{}') "
                   "FROM medrag_code_detail d WHERE d.release_id = t.release_id AND d.code = t.code "
                   r"AND d.kind = 'diagnosis' AND t.text ~* 'with\s*(or|/)\s*without'")


def upgrade() -> None:
    op.execute(WITHOUT)
    op.execute(REWRITE_NEGATED)
    op.execute("ANALYZE medrag_code_term")


def downgrade() -> None:
    op.execute(OLD_WITHOUT)
    op.execute(REWRITE_NEGATED)
