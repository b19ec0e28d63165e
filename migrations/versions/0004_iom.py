"""Internet-Only Manuals: one row per numbered section of each chapter PDF.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "iom_section",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("manual", sa.Text, nullable=False),
        sa.Column("chapter", sa.Text, nullable=False),
        sa.Column("section_number", sa.Text, nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("heading_path", ARRAY(sa.Text)),
        sa.Column("text", sa.Text),
        sa.Column("page_start", sa.Integer),
        sa.Column("page_end", sa.Integer),
        sa.PrimaryKeyConstraint("release_id", "manual", "chapter", "section_number"),
        comment="One numbered section of an Internet-Only Manual chapter PDF",
    )


def downgrade() -> None:
    op.drop_table("iom_section")
