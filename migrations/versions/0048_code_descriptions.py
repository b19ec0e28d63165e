"""Each code's description, lower-cased, in a narrow table of its own: what the code finder's words leg matches.

The words leg (medrag_code_words_leg) counts, for each code, how many of the term's word stems its description holds
(`description ILIKE '%fractur%'`). Read from icd10cm_code, a stem as common as "right" or "fractur" fetched a row of
that wide table per matching code (2,000 codes on as many pages for one stem) and lower-cased each description again
to test it: 19-23 ms for "closed fracture of right ankle", twice where the finder takes a second round. Here a
release's descriptions (ICD-10-CM codes without their 7th-character forms, HCPCS codes with the kind and termination
date the leg filters on) are lower-cased once, in 17 MB against icd10cm_code's 46 MB, so the leg tests them with LIKE
on the lower-cased stems: the same matches (PostgreSQL's ILIKE lower-cases both sides the same way in a UTF-8
database), 12 ms for that term. size is the length of the wording as the Tabular writes it, which the leg ranks
shorter descriptions first by. Each code release's rows are written when it is loaded (medrag_refresh_code_details)
and, for those loaded before, here.

Revision ID: 0048
Revises: 0047
"""

from alembic import op
from medrag.migrations import earlier_revision

revision = "0048"
down_revision = "0047"
branch_labels = None
depends_on = None


TABLE = """
CREATE TABLE medrag_code_description (
    release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
    code text NOT NULL,
    description text NOT NULL,
    size integer NOT NULL,
    kind text NOT NULL,
    termination_date date,
    PRIMARY KEY (release_id, code)
)
"""
TRIGRAMS = ("CREATE INDEX medrag_code_description_trgm ON medrag_code_description "
            "USING gin (release_id, description gin_trgm_ops)")

WRITE = r"""
CREATE FUNCTION medrag_write_code_descriptions(code_release integer)
RETURNS integer
LANGUAGE sql
AS $$
    DELETE FROM medrag_code_description WHERE release_id = code_release;
    WITH written AS (
        INSERT INTO medrag_code_description (release_id, code, description, size, kind, termination_date)
        SELECT c.release_id, c.code, lower(c.description), length(c.description), 'diagnosis', NULL
        FROM icd10cm_code c
        WHERE c.release_id = code_release AND c.seventh_character IS NULL AND c.description IS NOT NULL
        UNION ALL
        SELECT c.release_id, c.code, lower(c.long_description), length(c.long_description), c.kind,
               c.termination_date
        FROM hcpcs_code c
        WHERE c.release_id = code_release AND c.long_description IS NOT NULL
        RETURNING 1
    )
    SELECT count(*)::integer FROM written
$$
"""

# the refresh the loaders (and psql) call: 0043's, then the descriptions the words leg reads
OLD_REFRESH = earlier_revision("0043_service_without_clauses.py").REFRESH
_LAST_STEP = "    PERFORM medrag_write_service_without_clauses(code_release);\n"
REFRESH = OLD_REFRESH.replace(_LAST_STEP, _LAST_STEP + "    PERFORM medrag_write_code_descriptions(code_release);\n")


def upgrade() -> None:
    op.execute(TABLE)
    op.execute(TRIGRAMS)
    op.execute(WRITE)
    op.execute(REFRESH)
    op.execute("SELECT medrag_write_code_descriptions(id) FROM release WHERE source IN ('icd10cm', 'hcpcs') "
               "ORDER BY id")
    op.execute("ANALYZE medrag_code_description")


def downgrade() -> None:
    op.execute(OLD_REFRESH)
    op.execute("DROP FUNCTION medrag_write_code_descriptions(integer)")
    op.execute("DROP TABLE medrag_code_description")
