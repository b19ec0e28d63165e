"""What the code finder reads about a code, worked out once per release (medrag_code_detail).

Each code finder search scores every candidate against the words of the code's wordings: its description, its
inclusion terms, those of the codes above it, the description up to its first comma, its chapter's and section's
titles, and the codes a 7th character makes of it. Reading them stemmed each wording again on every search (15-25 ms
of a search for its 100-200 candidates, the larger part of a first search's database time). A release's codes never
change, so their stemmed wordings are written once, when the release is loaded, and read by primary key
(medrag_code_details, sql/search.sql, puts a code's wordings and those of the codes above it together).

The rule is a function of this revision rather than of the repeatable scripts because its output is stored: a
change to it is a new revision that refills the table. The ICD-10-CM and HCPCS loaders run it for each release they
load; this revision runs it once for the releases already loaded.

Revision ID: 0025
Revises: 0024
"""

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# The two wording rules the stored details and the Index leg (medrag/codes/plan.py) share.
HELPERS = r"""
-- the words of a wording as the english full-text configuration stems them ("Bath/shower chair" would be one
-- file-path token: slashes become spaces first)
CREATE FUNCTION medrag_lexemes(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT tsvector_to_array(to_tsvector('english', translate(wording, '/', ' ')))
$$;

-- what only a "without" clause of a wording names (up to its next "with", comma or end), which the wording does not
-- cover: "Vomiting without nausea" -> nausea, while "Hypertensive heart disease without heart failure" keeps heart,
-- which it also says outright
CREATE FUNCTION medrag_without_lexemes(wording text)
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

TABLE = """
CREATE TABLE medrag_code_detail (
    release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
    code text NOT NULL,
    kind text NOT NULL,
    display text,
    billable boolean,
    parent_code text,
    has_children boolean NOT NULL,
    medicare_valid boolean NOT NULL,
    termination_date date,
    wordings jsonb NOT NULL,
    head text[] NOT NULL,
    chapter integer,
    section_id text,
    seventh jsonb,
    PRIMARY KEY (release_id, code)
)
"""

COMMENTS = {
    "TABLE medrag_code_detail": "What the code finder scores a code by, per code release (written by "
                                "medrag_refresh_code_details as a release loads, read by medrag_code_details)",
    "COLUMN medrag_code_detail.wordings": "[text, lexemes, core lexemes, negated lexemes] of the description, then "
                                          "of each inclusion term and includes note, in the Tabular's order (core "
                                          "null when it is the lexemes, negated null when empty)",
    "COLUMN medrag_code_detail.head": "lexemes of the description up to its first comma (a HCPCS item's name)",
    "COLUMN medrag_code_detail.seventh": "[code, description, 7th character, meaning] of each form a 7th character "
                                         "makes of the code, in the Tabular's order",
}


def _wording(text: str, icd: bool) -> str:
    """[text, lexemes, core, negated] of one wording, core and negated null when they say nothing more (most
    wordings: a third of the table's size). ICD-10-CM sets nonessential modifiers (parentheses) and bracketed
    synonyms aside for its core, and names in a "without" clause what the wording does not cover."""
    if not icd:
        return f"jsonb_build_array({text}, medrag_lexemes({text}), NULL, NULL)"
    core = f"medrag_lexemes(regexp_replace({text}, '\\([^)]*\\)|\\[[^]]*\\]', ' ', 'g'))"
    return (f"jsonb_build_array({text}, medrag_lexemes({text}), "
            f"CASE WHEN {text} ~ '[][()]' THEN {core} END, "
            f"nullif(medrag_without_lexemes({text}), '{{}}'))")


REFRESH = f"""
CREATE FUNCTION medrag_refresh_code_details(code_release integer)
RETURNS integer
LANGUAGE sql
AS $$
    DELETE FROM medrag_code_detail WHERE release_id = code_release;
    WITH written AS (
        INSERT INTO medrag_code_detail (release_id, code, kind, display, billable, parent_code, has_children,
                                        medicare_valid, termination_date, wordings, head, chapter, section_id,
                                        seventh)
        SELECT c.release_id, c.code, 'diagnosis', c.description, c.billable, c.parent_code,
               EXISTS (SELECT 1 FROM icd10cm_code k WHERE k.release_id = c.release_id AND k.parent_code = c.code
                       AND k.seventh_character IS NULL),
               true, NULL,
               (SELECT jsonb_agg({_wording('t.term', True)} ORDER BY t.n)
                FROM (SELECT c.description AS term, 0 AS n
                      UNION ALL
                      SELECT term, n FROM unnest(coalesce(c.inclusion_terms, '{{}}') || coalesce(c.includes, '{{}}'))
                                          WITH ORDINALITY AS u(term, n)) t),
               medrag_lexemes(split_part(c.description, ',', 1)), c.chapter, c.section_id,
               (SELECT jsonb_agg(jsonb_build_array(k.code, k.description, k.seventh_character,
                                                   substr(k.description, length(c.description) + 3))
                                 ORDER BY k.tabular_order)
                FROM icd10cm_code k WHERE k.release_id = c.release_id AND k.parent_code = c.code
                     AND k.seventh_character IS NOT NULL)
        FROM icd10cm_code c WHERE c.release_id = code_release
        UNION ALL
        -- the short description is an abbreviation of the long one ("Stnd hemi (low seat) whlchr"): left out;
        -- coverage code I: "not payable by Medicare" (another payer's code, as S codes are)
        SELECT x.release_id, x.code, x.kind, coalesce(x.long_description, x.short_description), NULL, NULL, false,
               x.coverage_code IS DISTINCT FROM 'I', x.termination_date,
               jsonb_build_array({_wording('coalesce(x.long_description, x.short_description)', False)}),
               medrag_lexemes(split_part(coalesce(x.long_description, x.short_description), ',', 1)),
               NULL, NULL, NULL
        FROM hcpcs_code x WHERE x.release_id = code_release
        RETURNING 1
    )
    SELECT count(*)::integer FROM written;
$$
"""


def upgrade() -> None:
    op.execute(HELPERS)
    op.execute(TABLE)
    for target, comment in COMMENTS.items():
        quoted = comment.replace("'", "''")
        op.execute(f"COMMENT ON {target} IS '{quoted}'")
    op.execute(REFRESH)
    op.execute("SELECT medrag_refresh_code_details(id) FROM release WHERE source IN ('icd10cm', 'hcpcs') ORDER BY id")
    op.execute("ANALYZE medrag_code_detail")


def downgrade() -> None:
    op.execute("DROP FUNCTION medrag_refresh_code_details(integer)")
    op.execute("DROP TABLE medrag_code_detail")
    op.execute("DROP FUNCTION medrag_without_lexemes(text)")
    op.execute("DROP FUNCTION medrag_lexemes(text)")
