"""What the code finder scores a code by, worked out once per release (medrag_code_detail, medrag_code_term).

Each code finder search scores every candidate against the words of the code's wordings: its description, its
inclusion terms, those of the codes above it, the description up to its first comma, its chapter's and section's
titles, and the codes a 7th character makes of it. Reading them stemmed each wording again on every search (15-25 ms
of a search for its 100-200 candidates, the larger part of a first search's database time), and the scoring
(medrag_score_codes, sql/codes.sql) would apply the same text rules to every wording of every candidate again. A
release's codes never change, so each code's facts and each wording's stemmed words are written once, when the
release is loaded, and read by primary key.

The rules are functions of this revision rather than of the repeatable scripts because their output is stored: a
change to one is a new revision that refills the tables. The scoring applies the same functions to the one wording
it meets at search time, an ICD-10-CM Index entry. The ICD-10-CM and HCPCS loaders run medrag_refresh_code_details
for each release they load; this revision runs it once for the releases already loaded.

Revision ID: 0025
Revises: 0024
"""

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# The wording rules the stored details, the Index leg (medrag/codes/plan.py) and the scoring share.
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
$$;

-- the lexemes of a wording's filler: "without complications", "not elsewhere classified", "Pneumonia, unspecified
-- organism" say what is not known, not what the code is. One expression, so it is inlined where it is called (a
-- wording that names none of the filler's words is answered by the first test)
CREATE FUNCTION medrag_filler_lexemes(wording text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN wording !~* 'complication|elsewhere|otherwise|specified' THEN '{}'::text[] ELSE
        array_remove(ARRAY[CASE WHEN wording ~* 'without complications?' THEN 'complic' END,
                           CASE WHEN wording ~* 'not elsewhere classified' THEN 'elsewher' END,
                           CASE WHEN wording ~* 'not elsewhere classified' THEN 'classifi' END,
                           CASE WHEN wording ~* 'not otherwise specified' THEN 'otherwis' END,
                           CASE WHEN wording ~* 'site not specified' THEN 'site' END,
                           CASE WHEN wording ~* 'not otherwise specified|site not specified|\ynot specified\y'
                                THEN 'specifi' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+organism\y' THEN 'organ' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+site\y' THEN 'site' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+type\y' THEN 'type' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+part\y' THEN 'part' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+severity\y' THEN 'sever' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+stage\y' THEN 'stage' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+region\y' THEN 'region' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+side\y' THEN 'side' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+cause\y' THEN 'caus' END,
                           CASE WHEN wording ~* ',\s*unspecified\s+laterality\y' THEN 'later' END], NULL) END
$$;

-- a wording that says "other": an "Other ..." residual code is what a term did not say, unless it says "other"
CREATE FUNCTION medrag_says_other(wording text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT wording ~* '\yother\y'
$$;
"""

TABLES = """
CREATE TABLE medrag_code_detail (
    release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
    code text NOT NULL,
    kind text NOT NULL,
    billable boolean,
    parent_code text,
    has_children boolean NOT NULL,
    medicare_valid boolean NOT NULL,
    termination_date date,
    head text[],
    chapter integer,
    section_id text,
    seventh jsonb,
    is_default boolean NOT NULL,
    says_without boolean NOT NULL,
    says_not_otherwise boolean NOT NULL,
    says_accessory boolean NOT NULL,
    PRIMARY KEY (release_id, code)
);
CREATE TABLE medrag_code_term (
    release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
    code text NOT NULL,
    n integer NOT NULL,
    text text NOT NULL,
    lexemes text[] NOT NULL,
    core text[],
    negated text[],
    filler text[],
    says_other boolean NOT NULL,
    PRIMARY KEY (release_id, code, n)
)
"""

COMMENTS = {
    "TABLE medrag_code_detail": "What the code finder scores a code by, per code release (written by "
                                "medrag_refresh_code_details as a release loads)",
    "COLUMN medrag_code_detail.head": "lexemes of the description up to its first comma (a HCPCS item's name); "
                                      "null when it has no comma (its lexemes: medrag_code_term n 0)",
    "COLUMN medrag_code_detail.seventh": "[code, description, 7th character, meaning] of each form a 7th character "
                                         "makes of the code, in the Tabular's order",
    "COLUMN medrag_code_detail.is_default": "an unspecified / without complications / NOS code: what an unqualified "
                                            "term is coded to",
    "COLUMN medrag_code_detail.says_not_otherwise": "a not otherwise classified, unlisted or miscellaneous code",
    "COLUMN medrag_code_detail.says_accessory": "an accessory, attachment, replacement, component or add-on",
    "TABLE medrag_code_term": "Each wording of a code, stemmed: its description (n 0), then its inclusion terms and "
                              "includes notes in the Tabular's order",
    "COLUMN medrag_code_term.core": "lexemes without nonessential modifiers (parentheses) and bracketed synonyms; "
                                    "null when they are its lexemes (most wordings: a quarter of the table's size)",
    "COLUMN medrag_code_term.negated": "lexemes only its without clause names, which it does not cover; null: none",
    "COLUMN medrag_code_term.filler": "lexemes of its filler (not elsewhere classified, unspecified organism ...); "
                                      "null: none",
}

# the parts of a description the scoring weighs (medrag_code_detail's flags)
DEFAULT_WORDING = (r"(,\s*unspecified\y|\yunspecified\s*$|^unspecified\y|without complications?\y|\yuncomplicated\y|"
                   r"\ynot specified\y|\yNOS\y)")
NOT_OTHERWISE = r"not otherwise (classified|specified)|\yunlisted\y|\ymiscellaneous\y"
ACCESSORY = (r"\y(accessory|accessories|attachment|replacement|component|for use with|used with|add-on|"
             r"each additional)\y")

REFRESH = rf"""
CREATE FUNCTION medrag_refresh_code_details(code_release integer)
RETURNS integer
LANGUAGE sql
AS $$
    DELETE FROM medrag_code_detail WHERE release_id = code_release;
    DELETE FROM medrag_code_term WHERE release_id = code_release;
    INSERT INTO medrag_code_detail (release_id, code, kind, billable, parent_code, has_children,
                                    medicare_valid, termination_date, head, chapter, section_id, seventh, is_default,
                                    says_without, says_not_otherwise, says_accessory)
    SELECT c.release_id, c.code, 'diagnosis', c.billable, c.parent_code,
           EXISTS (SELECT 1 FROM icd10cm_code k WHERE k.release_id = c.release_id AND k.parent_code = c.code
                   AND k.seventh_character IS NULL),
           true, NULL, CASE WHEN c.description LIKE '%,%' THEN medrag_lexemes(split_part(c.description, ',', 1)) END,
           c.chapter, c.section_id,
           (SELECT jsonb_agg(jsonb_build_array(k.code, k.description, k.seventh_character,
                                               substr(k.description, length(c.description) + 3))
                             ORDER BY k.tabular_order)
            FROM icd10cm_code k WHERE k.release_id = c.release_id AND k.parent_code = c.code
                 AND k.seventh_character IS NOT NULL),
           c.description ~* '{DEFAULT_WORDING}', c.description ~* '\ywithout\y', false, false
    FROM icd10cm_code c WHERE c.release_id = code_release
    UNION ALL
    -- the short description is an abbreviation of the long one ("Stnd hemi (low seat) whlchr"): left out;
    -- coverage code I: "not payable by Medicare" (another payer's code, as S codes are)
    SELECT x.release_id, x.code, x.kind, NULL, NULL, false, x.coverage_code IS DISTINCT FROM 'I', x.termination_date,
           CASE WHEN x.display LIKE '%,%' THEN medrag_lexemes(split_part(x.display, ',', 1)) END, NULL, NULL, NULL,
           false, false,
           x.display ~* '{NOT_OTHERWISE}', x.display ~* '{ACCESSORY}'
    FROM (SELECT *, coalesce(long_description, short_description) AS display FROM hcpcs_code) x
    WHERE x.release_id = code_release;
    -- ICD-10-CM sets nonessential modifiers (parentheses) and bracketed synonyms aside for a wording's core
    WITH written AS (
        INSERT INTO medrag_code_term (release_id, code, n, text, lexemes, core, negated, filler, says_other)
        SELECT t.release_id, t.code, t.n, t.text, medrag_lexemes(t.text),
               CASE WHEN t.icd AND t.text ~ '[][()]'
                    THEN medrag_lexemes(regexp_replace(t.text, '\([^)]*\)|\[[^]]*\]', ' ', 'g')) END,
               CASE WHEN t.icd THEN nullif(medrag_without_lexemes(t.text), '{{}}') END,
               nullif(medrag_filler_lexemes(t.text), '{{}}'), medrag_says_other(t.text)
        FROM (SELECT c.release_id, c.code, 0 AS n, coalesce(c.description, c.code) AS text, true AS icd
              FROM icd10cm_code c WHERE c.release_id = code_release
              UNION ALL
              SELECT c.release_id, c.code, u.n::integer, u.term, true
              FROM icd10cm_code c,
                   unnest(coalesce(c.inclusion_terms, '{{}}') || coalesce(c.includes, '{{}}'))
                       WITH ORDINALITY AS u(term, n)
              WHERE c.release_id = code_release
              UNION ALL
              SELECT x.release_id, x.code, 0, coalesce(x.long_description, x.short_description, x.code), false
              FROM hcpcs_code x WHERE x.release_id = code_release) t
        RETURNING 1
    )
    SELECT count(*)::integer FROM written;
$$
"""


def upgrade() -> None:
    op.execute(HELPERS)
    op.execute(TABLES)
    for target, comment in COMMENTS.items():
        quoted = comment.replace("'", "''")
        op.execute(f"COMMENT ON {target} IS '{quoted}'")
    op.execute(REFRESH)
    op.execute("SELECT medrag_refresh_code_details(id) FROM release WHERE source IN ('icd10cm', 'hcpcs') ORDER BY id")
    op.execute("ANALYZE medrag_code_detail")
    op.execute("ANALYZE medrag_code_term")


def downgrade() -> None:
    op.execute("DROP FUNCTION medrag_refresh_code_details(integer)")
    op.execute("DROP TABLE medrag_code_term")
    op.execute("DROP TABLE medrag_code_detail")
    for function in ("medrag_says_other", "medrag_filler_lexemes", "medrag_without_lexemes", "medrag_lexemes"):
        op.execute(f"DROP FUNCTION {function}(text)")
