"""A wording that says "NEC" names a residual, as one that says "Other" does.

"Not elsewhere classified" is how the Index and some Tabular wordings say what the Tabular's "Other ..." codes say:
"Epilepsy, epileptic, epilepsia > specified NEC > not intractable" leads to G40.802 "Other epilepsy, not
intractable, ...", and "Encounter for screening for respiratory disorder NEC" is Z13.83's description. Read as fully
explained, that Index entry made G40.802 the first code for "not intractable epilepsy", tiered "high", above G40.909
"Epilepsy, unspecified, not intractable, ...". medrag_says_other now reads "NEC" (as written, in capitals) too, and
every stored wording's flag is rewritten: 46 of FY2026's, 43 of FY2021's, 2 of FY2025's.

Revision ID: 0038
Revises: 0037
"""

from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

SAYS_OTHER = r"""
CREATE OR REPLACE FUNCTION medrag_says_other(wording text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT wording ~* '\yother\y' OR wording ~ '\yNEC\y'
$$;
"""
OLD_SAYS_OTHER = r"""
CREATE OR REPLACE FUNCTION medrag_says_other(wording text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT wording ~* '\yother\y'
$$;
"""
REWRITE = ("UPDATE medrag_code_term SET says_other = medrag_says_other(text) "
           "WHERE says_other IS DISTINCT FROM medrag_says_other(text)")


def upgrade() -> None:
    op.execute(SAYS_OTHER)
    op.execute(REWRITE)


def downgrade() -> None:
    op.execute(OLD_SAYS_OTHER)
    op.execute(REWRITE)
