"""The abbreviations of HCPCS short descriptions, mined from each release (hcpcs_abbreviation).

A short description ("Inj gadoterate meglumi 0.1ml") abbreviates its long one ("Injection, gadoterate meglumine,
0.1 ml"); medrag.sources.hcpcs.abbreviations aligns the two over a whole release and keeps what each
abbreviation means there (inj: injection, w/c: wheelchair, ots: off-the-shelf). The code finder searches a typed
abbreviation's word beside it. A release loads its abbreviations with its codes; this revision mines those of the
releases already loaded, so a database does not wait for its next HCPCS release.

Revision ID: 0041
Revises: 0040
"""

from alembic import op
from sqlalchemy import text

from medrag.core import tuning
from medrag.sources.hcpcs.abbreviations import write_abbreviations

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE hcpcs_abbreviation (
    release_id integer NOT NULL REFERENCES release (id) ON DELETE CASCADE,
    abbreviation text NOT NULL,
    word text NOT NULL,
    support integer NOT NULL,
    aligned integer NOT NULL,
    PRIMARY KEY (release_id, abbreviation)
)""")
    conn = op.get_bind()
    for (release_id,) in conn.execute(text("SELECT DISTINCT release_id FROM hcpcs_code ORDER BY 1")).all():
        write_abbreviations(conn, release_id, tuning.value("abbreviation_min_support"))
    op.execute("ANALYZE hcpcs_abbreviation")


def downgrade() -> None:
    op.execute("DROP TABLE hcpcs_abbreviation")
