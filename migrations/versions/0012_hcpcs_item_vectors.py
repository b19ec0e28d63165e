"""HCPCS vectors from the item's own words; documents record the format they were built with.

An HCPCS document's text also carries its category path and the LCDs that list it: words a lay description of the
item ("standard manual wheelchair") never says, which pulled its vector away from such queries. chunk.embedding_text
holds what a chunk is embedded from when it is not heading + text (HCPCS: the long and short descriptions), and
release.documents_format the DOCUMENT_FORMATS version a release's documents were built with, so the
next `medrag refresh` rebuilds (and re-embeds) the HCPCS documents built before (6,800 chunks: that refresh took
194 s on 2 cores). sql/search.sql's leader rule weighs an HCPCS vector's distance for the shorter text.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("chunk", sa.Column("embedding_text", sa.Text(), nullable=True))
    op.add_column("release", sa.Column("documents_format", sa.Integer(), nullable=True))
    # every document so far was built by format 1: only the sources whose format is now higher get rebuilt
    op.execute("UPDATE release SET documents_format = 1 WHERE id IN (SELECT release_id FROM document)")


def downgrade() -> None:
    op.drop_column("release", "documents_format")
    op.drop_column("chunk", "embedding_text")
