"""Code sets: HCPCS Level II records and the ICD-10-CM tabular (chapters, sections, codes, order file).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hcpcs_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("sequence_number", sa.Integer),
        sa.Column("record_id_code", sa.Text),
        sa.Column("long_description", sa.Text),
        sa.Column("short_description", sa.Text),
        sa.Column("pricing_indicator_codes", ARRAY(sa.Text)),
        sa.Column("multiple_pricing_indicator", sa.Text),
        sa.Column("cim_references", ARRAY(sa.Text)),
        sa.Column("mcm_references", ARRAY(sa.Text)),
        sa.Column("statute_number", sa.Text),
        sa.Column("lab_certification_codes", ARRAY(sa.Text)),
        sa.Column("cross_reference_codes", ARRAY(sa.Text)),
        sa.Column("coverage_code", sa.Text),
        sa.Column("asc_payment_group", sa.Text),
        sa.Column("asc_payment_group_effective_date", sa.Date),
        sa.Column("mog_payment_group", sa.Text),
        sa.Column("mog_payment_policy_indicator", sa.Text),
        sa.Column("mog_effective_date", sa.Date),
        sa.Column("processing_note_number", sa.Text),
        sa.Column("betos_code", sa.Text),
        sa.Column("type_of_service_codes", ARRAY(sa.Text)),
        sa.Column("anesthesia_base_units", sa.Integer),
        sa.Column("code_added_date", sa.Date),
        sa.Column("action_effective_date", sa.Date),
        sa.Column("termination_date", sa.Date),
        sa.Column("action_code", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "kind", "code"),
    )
    op.create_index("hcpcs_code_code", "hcpcs_code", ["code"])
    op.create_index(
        "hcpcs_code_long_description_trgm",
        "hcpcs_code",
        ["long_description"],
        postgresql_using="gin",
        postgresql_ops={"long_description": "gin_trgm_ops"},
    )

    op.create_table(
        "icd10cm_chapter",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("chapter", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("first_code", sa.Text),
        sa.Column("last_code", sa.Text),
        sa.Column("inclusion_terms", ARRAY(sa.Text)),
        sa.Column("includes", ARRAY(sa.Text)),
        sa.Column("excludes1", ARRAY(sa.Text)),
        sa.Column("excludes2", ARRAY(sa.Text)),
        sa.Column("code_first", ARRAY(sa.Text)),
        sa.Column("use_additional_code", ARRAY(sa.Text)),
        sa.Column("code_also", ARRAY(sa.Text)),
        sa.Column("notes", ARRAY(sa.Text)),
        sa.PrimaryKeyConstraint("release_id", "chapter"),
    )

    op.create_table(
        "icd10cm_section",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("section_id", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("chapter", sa.Integer),
        sa.Column("first_code", sa.Text),
        sa.Column("last_code", sa.Text),
        sa.Column("has_codes", sa.Boolean),
        sa.Column("inclusion_terms", ARRAY(sa.Text)),
        sa.Column("includes", ARRAY(sa.Text)),
        sa.Column("excludes1", ARRAY(sa.Text)),
        sa.Column("excludes2", ARRAY(sa.Text)),
        sa.Column("code_first", ARRAY(sa.Text)),
        sa.Column("use_additional_code", ARRAY(sa.Text)),
        sa.Column("code_also", ARRAY(sa.Text)),
        sa.Column("notes", ARRAY(sa.Text)),
        sa.PrimaryKeyConstraint("release_id", "section_id"),
    )

    op.create_table(
        "icd10cm_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("parent_code", sa.Text),
        sa.Column("chapter", sa.Integer),
        sa.Column("section_id", sa.Text),
        sa.Column("depth", sa.Integer),
        sa.Column("tabular_order", sa.Integer),
        sa.Column("billable", sa.Boolean),
        sa.Column("requires_seventh_character", sa.Boolean),
        sa.Column("is_placeholder", sa.Boolean),
        sa.Column("inclusion_terms", ARRAY(sa.Text)),
        sa.Column("includes", ARRAY(sa.Text)),
        sa.Column("excludes1", ARRAY(sa.Text)),
        sa.Column("excludes2", ARRAY(sa.Text)),
        sa.Column("code_first", ARRAY(sa.Text)),
        sa.Column("use_additional_code", ARRAY(sa.Text)),
        sa.Column("code_also", ARRAY(sa.Text)),
        sa.Column("notes", ARRAY(sa.Text)),
        sa.Column("seven_chr_note", sa.Text),
        sa.Column("seven_chr_def", JSONB),
        sa.Column("seven_chr_def_notes", ARRAY(sa.Text)),
        sa.Column("seven_chr_def_from", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "code"),
    )
    op.create_index("icd10cm_code_code", "icd10cm_code", ["code"])
    op.create_index("icd10cm_code_parent", "icd10cm_code", ["release_id", "parent_code"])
    op.create_index(
        "icd10cm_code_description_trgm",
        "icd10cm_code",
        ["description"],
        postgresql_using="gin",
        postgresql_ops={"description": "gin_trgm_ops"},
    )

    op.create_table(
        "icd10cm_order_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("order_number", sa.Integer),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("billable", sa.Boolean),
        sa.Column("short_description", sa.Text),
        sa.Column("long_description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "code"),
    )


def downgrade() -> None:
    op.drop_table("icd10cm_order_code")
    op.drop_table("icd10cm_code")
    op.drop_table("icd10cm_section")
    op.drop_table("icd10cm_chapter")
    op.drop_table("hcpcs_code")
