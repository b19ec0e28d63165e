"""Two readings of the Tabular's wording the code finder scores by, corrected and re-applied to every code release.

- The unspecified side is a default. ICD-10-CM codes a side only when it is documented: "Burn of second degree of
  unspecified ankle" (T25.219) is what a term naming no side asks for, as much as any ", unspecified" code. A code is
  such a default when a sibling's description says its words with "unspecified" read as "right" or "left", in any
  order ("single right finger", "unspecified single finger"): 1,562 codes of FY2026 that the wording rule of 0025
  missed. Without it, the right-side code, found first, won with "high".
- A "without" clause ends where the wording goes on with "with" or "of": "Laceration without foreign body of right
  forearm" says nothing of a foreign body, but it is a laceration of the right forearm. The clause of 0025 ran to the
  next comma (PostgreSQL's regular expressions take one greediness for the whole pattern, so its lazy clause was
  greedy), so a term's site and side found nothing in 892 laceration and puncture codes.

Revision ID: 0036
Revises: 0035
"""

from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

WITHOUT = r"""
CREATE OR REPLACE FUNCTION medrag_without_lexemes(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN wording ~* 'without' THEN (
        WITH clause AS (
            -- each clause cut where "with" or "of" goes on: said is what the wording says is absent
            SELECT cut.said, substr(m[1], length(cut.said) + 1) AS rest
            FROM regexp_matches(wording, '\mwithout\s+([^,]*)', 'gi') AS m,
                 LATERAL (SELECT regexp_replace(m[1], '\s+(with|of)\M.*$', '', 'i') AS said) cut)
        SELECT coalesce(array_agg(DISTINCT lexeme), '{}')
        FROM clause, unnest(medrag_lexemes(clause.said)) AS lexeme
        WHERE lexeme <> ALL (medrag_lexemes(regexp_replace(wording, '\mwithout\s+[^,]*', ' ', 'gi') || ' '
                                            || coalesce((SELECT string_agg(rest, ' ') FROM clause), ''))))
    ELSE '{}' END
$$
"""

# 0025's clause, for the downgrade
OLD_WITHOUT = r"""
CREATE OR REPLACE FUNCTION medrag_without_lexemes(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN wording ~* 'without' THEN
        (SELECT coalesce(array_agg(DISTINCT lexeme), '{}')
         FROM regexp_matches(wording, '\mwithout\s+([^,]*?)(?=\s+with\M|,|$)', 'gi') AS clause,
              unnest(medrag_lexemes(clause[1])) AS lexeme
         WHERE lexeme <> ALL (medrag_lexemes(
             regexp_replace(wording, '\mwithout\s+([^,]*?)(?=\s+with\M|,|$)', ' ', 'gi'))))
        ELSE '{}' END
$$
"""

SIDE_DEFAULTS = r"""
-- a wording's words, lower-cased and sorted: "single right finger" and "unspecified single finger" differ by one word
CREATE FUNCTION medrag_word_bag(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY(SELECT w FROM regexp_split_to_table(lower(wording), '[\s,]+') AS w WHERE w <> '' ORDER BY w)
$$;

CREATE FUNCTION medrag_refresh_side_defaults(code_release integer)
RETURNS integer
LANGUAGE sql
-- a load runs it on rows not yet analyzed: guessing one row per release, the planner read the whole release once per
-- code in a nested loop (minutes); merge and hash joins read it once
SET enable_nestloop = off
AS $$
    WITH side_default AS (
        UPDATE medrag_code_detail d SET is_default = true
        FROM icd10cm_code c
        WHERE d.release_id = code_release AND c.release_id = code_release AND c.code = d.code AND NOT d.is_default
          AND c.description ~* '\yunspecified\y'
          AND EXISTS (SELECT 1 FROM icd10cm_code s
                      WHERE s.release_id = code_release AND s.parent_code = c.parent_code AND s.code <> c.code
                        AND s.description ~* '\y(right|left)\y'
                        AND medrag_word_bag(s.description)
                            IN (medrag_word_bag(regexp_replace(c.description, '\yunspecified\y', 'right', 'i')),
                                medrag_word_bag(regexp_replace(c.description, '\yunspecified\y', 'left', 'i'))))
        RETURNING 1
    )
    SELECT count(*)::integer FROM side_default
$$
"""


# the refresh the loaders (and psql) call: 0025's rewrite of a release's rows, renamed, then the side defaults
REFRESH = r"""
CREATE FUNCTION medrag_refresh_code_details(code_release integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    written integer;
BEGIN
    written := medrag_write_code_details(code_release);
    PERFORM medrag_refresh_side_defaults(code_release);
    RETURN written;
END
$$
"""


# every ICD-10-CM wording's "without" words, as the corrected function reads them
REWRITE_NEGATED = ("UPDATE medrag_code_term t SET negated = nullif(medrag_without_lexemes(t.text), '{}') "
                   "FROM medrag_code_detail d WHERE d.release_id = t.release_id AND d.code = t.code "
                   "AND d.kind = 'diagnosis' AND t.text ~* 'without'")


def upgrade() -> None:
    op.execute(WITHOUT)
    op.execute(SIDE_DEFAULTS)
    op.execute("ALTER FUNCTION medrag_refresh_code_details(integer) RENAME TO medrag_write_code_details")
    op.execute(REFRESH)
    op.execute(REWRITE_NEGATED)
    op.execute("SELECT medrag_refresh_side_defaults(id) FROM release WHERE source = 'icd10cm' ORDER BY id")
    op.execute("ANALYZE medrag_code_detail")
    op.execute("ANALYZE medrag_code_term")


def downgrade() -> None:
    op.execute(OLD_WITHOUT)
    op.execute("DROP FUNCTION medrag_refresh_code_details(integer)")
    op.execute("ALTER FUNCTION medrag_write_code_details(integer) RENAME TO medrag_refresh_code_details")
    op.execute("DROP FUNCTION medrag_refresh_side_defaults(integer)")
    op.execute("DROP FUNCTION medrag_word_bag(text)")
    # every code release's rows as 0025's rules write them: its defaults, its "without" clauses
    op.execute("SELECT medrag_refresh_code_details(id) FROM release WHERE source IN ('icd10cm', 'hcpcs') ORDER BY id")
