"""The unspecified side is not what a term that names the side asks for.

0036 made the unspecified side of a right / left pair a default: what a term naming no side is coded to. A term that
names a side the code's siblings offer says more than "unspecified eye": "Primary open-angle glaucoma, both eyes" is
H40.113 (bilateral), but H40.119 ("..., unspecified eye") explained the word "eyes", was the default and came first.
On 300 Tabular descriptions of bilateral codes with "bilateral" written "both eyes" / "both ears" / ..., the
unspecified side came first for two in three. medrag_code_detail.unspecified_side_of now names the sides an
unspecified-side code's siblings offer (right, left, both), and the finder reads a term naming one of them as
contradicting the code (sql/finder_features.sql), as it reads a code of the other side.

Revision ID: 0040
Revises: 0039
"""

from alembic import op
from medrag.migrations import earlier_revision

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None

# 0036's rule (a sibling says the code's words with "unspecified" read as "right" or "left") gives the sides; a
# sibling that says some of the code's words and "bilateral" ("Primary open-angle glaucoma, bilateral" beside
# "..., unspecified eye") adds both
SIDE_DEFAULTS = r"""
CREATE OR REPLACE FUNCTION medrag_refresh_side_defaults(code_release integer)
RETURNS integer
LANGUAGE sql
-- a load runs it on rows not yet analyzed: guessing one row per release, the planner read the whole release once per
-- code in a nested loop (minutes); merge and hash joins read it once
SET enable_nestloop = off
AS $$
    WITH sibling_side AS (
        SELECT c.code, side.value AS side
        FROM icd10cm_code c
        JOIN icd10cm_code s ON s.release_id = code_release AND s.parent_code = c.parent_code AND s.code <> c.code
        CROSS JOIN LATERAL (
            SELECT CASE WHEN s.description ~* '\y(right|left)\y'
                        THEN CASE medrag_word_bag(s.description)
                                 WHEN medrag_word_bag(regexp_replace(c.description, '\yunspecified\y', 'right', 'i'))
                                 THEN 'right'
                                 WHEN medrag_word_bag(regexp_replace(c.description, '\yunspecified\y', 'left', 'i'))
                                 THEN 'left' END
                        WHEN s.description ~* '\ybilateral\y'
                             AND array_remove(medrag_word_bag(s.description), 'bilateral')
                                 <@ medrag_word_bag(c.description)
                        THEN 'both' END AS value) side
        WHERE c.release_id = code_release AND c.description ~* '\yunspecified\y' AND side.value IS NOT NULL
    ),
    unspecified_side AS (
        SELECT code, array_agg(DISTINCT side ORDER BY side) AS sides
        FROM sibling_side GROUP BY code HAVING bool_or(side IN ('right', 'left'))
    ),
    side_default AS (
        UPDATE medrag_code_detail d SET is_default = true, unspecified_side_of = u.sides
        FROM unspecified_side u
        WHERE d.release_id = code_release AND d.code = u.code
          AND (NOT d.is_default OR d.unspecified_side_of IS DISTINCT FROM u.sides)
        RETURNING 1
    )
    SELECT count(*)::integer FROM side_default
$$
"""


def _previous_side_defaults() -> str:
    """0036's medrag_refresh_side_defaults, read from its revision, for the downgrade."""
    script = earlier_revision("0036_side_defaults_and_without_clauses.py").SIDE_DEFAULTS
    return "CREATE OR REPLACE " + script[script.index("FUNCTION medrag_refresh_side_defaults"):]


def upgrade() -> None:
    op.execute("ALTER TABLE medrag_code_detail ADD COLUMN unspecified_side_of text[]")
    op.execute("COMMENT ON COLUMN medrag_code_detail.unspecified_side_of IS 'the sides (right, left, both) the "
               "siblings of an unspecified-side code name: a term naming one of them contradicts it; null: not such "
               "a code'")
    op.execute(SIDE_DEFAULTS)
    op.execute("SELECT medrag_refresh_side_defaults(id) FROM release WHERE source = 'icd10cm' ORDER BY id")
    op.execute("ANALYZE medrag_code_detail")


def downgrade() -> None:
    op.execute(_previous_side_defaults())
    op.execute("ALTER TABLE medrag_code_detail DROP COLUMN unspecified_side_of")
