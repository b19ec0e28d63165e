"""Medicare Coverage Database: every NCD / LCD / Article export table, and NCDs with clean text.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcd_article",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("article_type", sa.Integer),
        sa.Column("title", sa.Text),
        sa.Column("article_pub_date", sa.DateTime),
        sa.Column("article_eff_date", sa.DateTime),
        sa.Column("article_end_date", sa.DateTime),
        sa.Column("description", sa.Text),
        sa.Column("other_comments", sa.Text),
        sa.Column("sad_url", sa.Text),
        sa.Column("status", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("history_exp", sa.Text),
        sa.Column("key_article", sa.Text),
        sa.Column("icd9_covered_para", sa.Text),
        sa.Column("icd9_noncovered_para", sa.Text),
        sa.Column("revenue_para", sa.Text),
        sa.Column("thirty_percent", sa.Text),
        sa.Column("article_rev_end_date", sa.DateTime),
        sa.Column("source_article_id", sa.Integer),
        sa.Column("date_retired", sa.DateTime),
        sa.Column("keywords", sa.Text),
        sa.Column("icd10_doc", sa.Text),
        sa.Column("add_icd10_info", sa.Text),
        sa.Column("cms_cov_policy", sa.Text),
        sa.Column("display_id", sa.Integer),
        sa.Column("reference_article", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version"),
        comment="MCD export member article.csv (article)",
    )

    op.create_table(
        "mcd_article_future_retire",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("retire_dt", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id"),
        comment="MCD export member article_future_retire.csv (article)",
    )

    op.create_table(
        "mcd_article_related_documents",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("r_article_id", sa.Integer),
        sa.Column("r_article_version", sa.Integer),
        sa.Column("r_lcd_id", sa.Integer),
        sa.Column("r_lcd_version", sa.Integer),
        sa.Column("r_contractor_id", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "related_num"),
        comment="MCD export member article_related_documents.csv (article)",
    )

    op.create_table(
        "mcd_article_related_ncd_documents",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("r_ncd_id", sa.Integer),
        sa.Column("r_ncd_version", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "related_num"),
        comment="MCD export member article_related_ncd_documents.csv (article)",
    )

    op.create_table(
        "mcd_article_related_source_icd9",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("source_article_id", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "related_num"),
        comment="MCD export member article_related_source_icd9.csv (article)",
    )

    op.create_table(
        "mcd_article_type_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_type_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_type_id"),
        comment="MCD export member article_type_lookup.csv (article)",
    )

    op.create_table(
        "mcd_article_url_type_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url_type_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "url_type_id"),
        comment="MCD export member article_url_type_lookup.csv (article)",
    )

    op.create_table(
        "mcd_article_x_bill_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("bill_code_id", sa.Text, nullable=False),
        sa.Column("bill_code_version", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "bill_code_id", "bill_code_version"),
        comment="MCD export member article_x_bill_code.csv (article)",
    )

    op.create_table(
        "mcd_article_x_code_table",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("article_type", sa.Integer),
        sa.Column("code_table_row", sa.Integer, nullable=False),
        sa.Column("brand_name", sa.Text),
        sa.Column("eff_date", sa.DateTime),
        sa.Column("end_date", sa.DateTime),
        sa.Column("comments", sa.Text),
        sa.Column("hcpc_code_id", sa.Text),
        sa.Column("hcpc_code_version", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("short_description", sa.Text),
        sa.Column("long_description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "code_table_row"),
        comment="MCD export member article_x_code_table.csv (article)",
    )

    op.create_table(
        "mcd_article_x_contractor",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("article_type", sa.Integer),
        sa.Column("contractor_id", sa.Integer, nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("contractor_version", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint(
            "release_id", "article_id", "article_version", "contractor_id", "contractor_type_id", "contractor_version"
        ),
        comment="MCD export member article_x_contractor.csv (article)",
    )

    op.create_table(
        "mcd_article_x_hcpc_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_id", sa.Text, nullable=False),
        sa.Column("hcpc_code_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_group", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("long_description", sa.Text),
        sa.Column("short_description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id", "article_id", "article_version", "hcpc_code_id", "hcpc_code_version", "hcpc_code_group"
        ),
        comment="MCD export member article_x_hcpc_code.csv (article)",
    )

    op.create_table(
        "mcd_article_x_hcpc_code_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "hcpc_code_group"),
        comment="MCD export member article_x_hcpc_code_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_hcpc_modifier",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("hcpc_modifier_code_id", sa.Text, nullable=False),
        sa.Column("hcpc_modifier_code_version", sa.Integer, nullable=False),
        sa.Column("hcpc_modifier_group", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id",
            "article_id",
            "article_version",
            "hcpc_modifier_code_id",
            "hcpc_modifier_code_version",
            "hcpc_modifier_group",
        ),
        comment="MCD export member article_x_hcpc_modifier.csv (article)",
    )

    op.create_table(
        "mcd_article_x_hcpc_modifier_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("hcpc_modifier_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "hcpc_modifier_group"),
        comment="MCD export member article_x_hcpc_modifier_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_covered",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("icd10_code_id", sa.Text, nullable=False),
        sa.Column("icd10_code_version", sa.Integer, nullable=False),
        sa.Column("icd10_covered_group", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("sort_order", sa.Integer),
        sa.Column("description", sa.Text),
        sa.Column("asterisk", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id", "article_id", "article_version", "icd10_code_id", "icd10_code_version", "icd10_covered_group"
        ),
        comment="MCD export member article_x_icd10_covered.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_covered_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("icd10_covered_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("icd10_covered_ast", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "icd10_covered_group"),
        comment="MCD export member article_x_icd10_covered_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_noncovered",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("icd10_code_id", sa.Text, nullable=False),
        sa.Column("icd10_code_version", sa.Integer, nullable=False),
        sa.Column("icd10_noncovered_group", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("sort_order", sa.Integer),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id",
            "article_id",
            "article_version",
            "icd10_code_id",
            "icd10_code_version",
            "icd10_noncovered_group",
        ),
        comment="MCD export member article_x_icd10_noncovered.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_noncovered_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("icd10_noncovered_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "icd10_noncovered_group"),
        comment="MCD export member article_x_icd10_noncovered_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_pcs_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("sort_order", sa.Integer),
        sa.Column("icd10_pcs_code_id", sa.Text, nullable=False),
        sa.Column("icd10_pcs_code_version", sa.Integer, nullable=False),
        sa.Column("icd10_pcs_code_group", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id",
            "article_id",
            "article_version",
            "icd10_pcs_code_id",
            "icd10_pcs_code_version",
            "icd10_pcs_code_group",
        ),
        comment="MCD export member article_x_icd10_pcs_code.csv (article)",
    )

    op.create_table(
        "mcd_article_x_icd10_pcs_code_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("icd10_pcs_code_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "icd10_pcs_code_group"),
        comment="MCD export member article_x_icd10_pcs_code_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_other_coding_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("other_coding_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("codes", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "other_coding_group"),
        comment="MCD export member article_x_other_coding_group.csv (article)",
    )

    op.create_table(
        "mcd_article_x_primary_jurisdiction",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("state_id", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "state_id"),
        comment="MCD export member article_x_primary_jurisdiction.csv (article)",
    )

    op.create_table(
        "mcd_article_x_response_to_comment",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("rtc_num", sa.Integer, nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("response", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "rtc_num"),
        comment="MCD export member article_x_response_to_comment.csv (article)",
    )

    op.create_table(
        "mcd_article_x_revenue_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("revenue_code_id", sa.Text, nullable=False),
        sa.Column("revenue_code_version", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id", "article_id", "article_version", "revenue_code_id", "revenue_code_version"
        ),
        comment="MCD export member article_x_revenue_code.csv (article)",
    )

    op.create_table(
        "mcd_article_x_revision_history",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("rev_hist_num", sa.Text, nullable=False),
        sa.Column("rev_hist_date", sa.DateTime),
        sa.Column("rev_hist_exp", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "rev_hist_num"),
        comment="MCD export member article_x_revision_history.csv (article)",
    )

    op.create_table(
        "mcd_article_x_sticky_note",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("sticky_note_version", sa.Integer, nullable=False),
        sa.Column("sticky_note", sa.Text),
        sa.Column("sticky_note_dt", sa.DateTime),
        sa.Column("sticky_note_posting_dt", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "sticky_note_version"),
        comment="MCD export member article_x_sticky_note.csv (article)",
    )

    op.create_table(
        "mcd_article_x_urls",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("article_id", sa.Integer, nullable=False),
        sa.Column("article_version", sa.Integer, nullable=False),
        sa.Column("url_type_id", sa.Integer, nullable=False),
        sa.Column("url_id", sa.Integer, nullable=False),
        sa.Column("url", sa.Text),
        sa.Column("url_name", sa.Text),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("url_description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "article_id", "article_version", "url_type_id", "url_id"),
        comment="MCD export member article_x_urls.csv (article)",
    )

    op.create_table(
        "mcd_contractor",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contractor_id", sa.Integer, nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("contractor_version", sa.Integer, nullable=False),
        sa.Column("contractor_bus_name", sa.Text),
        sa.Column("contractor_number", sa.Text),
        sa.Column("dmerc_rgn", sa.Integer),
        sa.Column("address1", sa.Text),
        sa.Column("address2", sa.Text),
        sa.Column("address3", sa.Text),
        sa.Column("city", sa.Text),
        sa.Column("state_id", sa.Integer),
        sa.Column("zipcode", sa.Text),
        sa.Column("phone", sa.Text),
        sa.Column("fax", sa.Text),
        sa.Column("status", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("url", sa.Text),
        sa.Column("email", sa.Text),
        sa.Column("ignore", sa.Text),
        sa.Column("status_flag", sa.Text),
        sa.Column("cmd_name", sa.Text),
        sa.Column("cmd_title", sa.Text),
        sa.Column("contractor_subtype_id", sa.Integer),
        sa.PrimaryKeyConstraint("release_id", "contractor_id", "contractor_type_id", "contractor_version"),
        comment="MCD export member contractor.csv (lcd)",
    )

    op.create_table(
        "mcd_contractor_jurisdiction",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contractor_id", sa.Integer, nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("contractor_version", sa.Integer, nullable=False),
        sa.Column("state_id", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("active_date", sa.DateTime),
        sa.Column("term_date", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "contractor_id", "contractor_type_id", "contractor_version", "state_id"),
        comment="MCD export member contractor_jurisdiction.csv (lcd)",
    )

    op.create_table(
        "mcd_contractor_oversight",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contractor_id", sa.Integer, nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("contractor_version", sa.Integer, nullable=False),
        sa.Column("region_id", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "contractor_id", "contractor_type_id", "contractor_version", "region_id"),
        comment="MCD export member contractor_oversight.csv (lcd)",
    )

    op.create_table(
        "mcd_contractor_subtype_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contractor_subtype_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "contractor_subtype_id"),
        comment="MCD export member contractor_subtype_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_contractor_type_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "contractor_type_id"),
        comment="MCD export member contractor_type_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_dmerc_region_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("region_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("psc_description", sa.Text),
        sa.Column("mac_description", sa.Text),
        sa.Column("super_mac_description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "region_id"),
        comment="MCD export member dmerc_region_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_draft_contact_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("contact_id", sa.Integer, nullable=False),
        sa.Column("email_address", sa.Text),
        sa.Column("first_name", sa.Text),
        sa.Column("middle_initial", sa.Text),
        sa.Column("last_name", sa.Text),
        sa.Column("phone", sa.Text),
        sa.Column("address1", sa.Text),
        sa.Column("address2", sa.Text),
        sa.Column("address3", sa.Text),
        sa.Column("city", sa.Text),
        sa.Column("state_id", sa.Integer),
        sa.Column("zipcode", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("p_ext", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "contact_id"),
        comment="MCD export member draft_contact_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("determination_number", sa.Text),
        sa.Column("orig_det_eff_date", sa.DateTime),
        sa.Column("ent_det_end_date", sa.DateTime),
        sa.Column("rev_eff_date", sa.DateTime),
        sa.Column("rev_end_date", sa.DateTime),
        sa.Column("indication", sa.Text),
        sa.Column("diagnoses_support", sa.Text),
        sa.Column("icd9_dont_support_para", sa.Text),
        sa.Column("icd9_dont_support_ast", sa.Text),
        sa.Column("diagnoses_dont_support", sa.Text),
        sa.Column("coding_guidelines", sa.Text),
        sa.Column("doc_reqs", sa.Text),
        sa.Column("appendices", sa.Text),
        sa.Column("util_guide", sa.Text),
        sa.Column("source_info", sa.Text),
        sa.Column("adv_meeting", sa.Text),
        sa.Column("comment_start_dt", sa.DateTime),
        sa.Column("comment_end_dt", sa.DateTime),
        sa.Column("notice_start_dt", sa.DateTime),
        sa.Column("rev_hist_num", sa.Text),
        sa.Column("history_exp", sa.Text),
        sa.Column("last_reviewed_on", sa.DateTime),
        sa.Column("status", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("cms_cov_policy", sa.Text),
        sa.Column("display_id", sa.Integer),
        sa.Column("draft_contact", sa.Integer),
        sa.Column("revenue_para", sa.Text),
        sa.Column("thirty_percent", sa.Text),
        sa.Column("keywords", sa.Text),
        sa.Column("associated_info", sa.Text),
        sa.Column("notice_end_dt", sa.DateTime),
        sa.Column("date_retired", sa.DateTime),
        sa.Column("draft_released_date", sa.DateTime),
        sa.Column("source_lcd_id", sa.Integer),
        sa.Column("add_icd10_info", sa.Text),
        sa.Column("icd10_doc", sa.Text),
        sa.Column("synopsis_changes", sa.Text),
        sa.Column("bibliography", sa.Text),
        sa.Column("summary_of_evidence", sa.Text),
        sa.Column("analysis_of_evidence", sa.Text),
        sa.Column("mcd_publish_date", sa.DateTime),
        sa.Column("issue", sa.Text),
        sa.Column("issue_change", sa.Text),
        sa.Column("mac_initiated", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version"),
        comment="MCD export member lcd.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_future_retire",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("retire_dt", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id"),
        comment="MCD export member lcd_future_retire.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_related_documents",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("r_article_id", sa.Integer),
        sa.Column("r_article_version", sa.Integer),
        sa.Column("r_lcd_id", sa.Integer),
        sa.Column("r_lcd_version", sa.Integer),
        sa.Column("r_contractor_id", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "related_num"),
        comment="MCD export member lcd_related_documents.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_related_ncd_documents",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("r_ncd_id", sa.Integer),
        sa.Column("r_ncd_version", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "related_num"),
        comment="MCD export member lcd_related_ncd_documents.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_related_source_icd9",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("related_num", sa.Integer, nullable=False),
        sa.Column("source_lcd_id", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "related_num"),
        comment="MCD export member lcd_related_source_icd9.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_url_type_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url_type_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "url_type_id"),
        comment="MCD export member lcd_url_type_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_advisory_committee",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("meeting_id", sa.Integer, nullable=False),
        sa.Column("meeting_date", sa.DateTime),
        sa.Column("meeting_info", sa.Text),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "meeting_id"),
        comment="MCD export member lcd_x_advisory_committee.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_contractor",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("contractor_id", sa.Integer, nullable=False),
        sa.Column("contractor_type_id", sa.Integer, nullable=False),
        sa.Column("contractor_version", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint(
            "release_id", "lcd_id", "lcd_version", "contractor_id", "contractor_type_id", "contractor_version"
        ),
        comment="MCD export member lcd_x_contractor.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_hcpc_code",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_id", sa.Text, nullable=False),
        sa.Column("hcpc_code_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_group", sa.Integer, nullable=False),
        sa.Column("range", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("long_description", sa.Text),
        sa.Column("short_description", sa.Text),
        sa.PrimaryKeyConstraint(
            "release_id", "lcd_id", "lcd_version", "hcpc_code_id", "hcpc_code_version", "hcpc_code_group"
        ),
        comment="MCD export member lcd_x_hcpc_code.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_hcpc_code_group",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("hcpc_code_group", sa.Integer, nullable=False),
        sa.Column("paragraph", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "hcpc_code_group"),
        comment="MCD export member lcd_x_hcpc_code_group.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_primary_jurisdiction",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("state_id", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "state_id"),
        comment="MCD export member lcd_x_primary_jurisdiction.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_reason_change",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("reason_change_id", sa.Integer, nullable=False),
        sa.Column("reason_change_version", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("reason_change_other", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "reason_change_id", "reason_change_version"),
        comment="MCD export member lcd_x_reason_change.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_requestor_letters",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("letter_id", sa.Integer, nullable=False),
        sa.Column("requestor_name", sa.Text),
        sa.Column("letter_path", sa.Text),
        sa.Column("size", sa.Integer),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "letter_id"),
        comment="MCD export member lcd_x_requestor_letters.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_revision_history",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("rev_hist_num", sa.Text, nullable=False),
        sa.Column("rev_hist_date", sa.DateTime),
        sa.Column("rev_hist_exp", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "rev_hist_num"),
        comment="MCD export member lcd_x_revision_history.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_sticky_note",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("sticky_note_version", sa.Integer, nullable=False),
        sa.Column("sticky_note", sa.Text),
        sa.Column("sticky_note_dt", sa.DateTime),
        sa.Column("sticky_note_posting_dt", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "sticky_note_version"),
        comment="MCD export member lcd_x_sticky_note.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_synopsis_changes_fields",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("synopsis_changes_field_id", sa.Integer, nullable=False),
        sa.Column("last_updated", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "synopsis_changes_field_id"),
        comment="MCD export member lcd_x_synopsis_changes_fields.csv (lcd)",
    )

    op.create_table(
        "mcd_lcd_x_urls",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lcd_id", sa.Integer, nullable=False),
        sa.Column("lcd_version", sa.Integer, nullable=False),
        sa.Column("url_type_id", sa.Integer, nullable=False),
        sa.Column("url_id", sa.Integer, nullable=False),
        sa.Column("url", sa.Text),
        sa.Column("url_name", sa.Text),
        sa.Column("sort_order", sa.Integer),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("url_description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "lcd_id", "lcd_version", "url_type_id", "url_id"),
        comment="MCD export member lcd_x_urls.csv (lcd)",
    )

    op.create_table(
        "mcd_ncd_bnft_ctgry_ref",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("bnft_ctgry_cd", sa.Integer, nullable=False),
        sa.Column("bnft_ctgry_desc", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "bnft_ctgry_cd"),
        comment="MCD export member ncd_bnft_ctgry_ref.csv (ncd)",
    )

    op.create_table(
        "mcd_ncd_pblctn_ref",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("pblctn_cd", sa.Integer, nullable=False),
        sa.Column("pblctn_num", sa.Text),
        sa.Column("pblctn_title", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "pblctn_cd"),
        comment="MCD export member ncd_pblctn_ref.csv (ncd)",
    )

    op.create_table(
        "mcd_ncd_trkg",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ncd_id", sa.Integer, nullable=False),
        sa.Column("ncd_vrsn_num", sa.Integer, nullable=False),
        sa.Column("natl_cvrg_type", sa.Boolean),
        sa.Column("cvrg_lvl_cd", sa.Integer),
        sa.Column("ncd_mnl_sect", sa.Text),
        sa.Column("ncd_mnl_sect_title", sa.Text),
        sa.Column("ncd_efctv_dt", sa.DateTime),
        sa.Column("ncd_impltn_dt", sa.DateTime),
        sa.Column("ncd_trmntn_dt", sa.DateTime),
        sa.Column("itm_srvc_desc", sa.Text),
        sa.Column("indctn_lmtn", sa.Text),
        sa.Column("xref_txt", sa.Text),
        sa.Column("othr_txt", sa.Text),
        sa.Column("trnsmtl_num", sa.Integer),
        sa.Column("trnsmtl_issnc_dt", sa.DateTime),
        sa.Column("trnsmtl_url", sa.Text),
        sa.Column("chg_rqst_num", sa.Integer),
        sa.Column("pblctn_cd", sa.Integer),
        sa.Column("rev_hstry", sa.Text),
        sa.Column("under_rvw", sa.Boolean),
        sa.Column("creatd_tmstmp", sa.DateTime),
        sa.Column("last_updt_tmstmp", sa.DateTime),
        sa.Column("last_clrnc_tmstmp", sa.DateTime),
        sa.Column("ncd_lab", sa.Boolean),
        sa.Column("ncd_keyword", sa.Text),
        sa.Column("ncd_ama", sa.Boolean),
        sa.PrimaryKeyConstraint("release_id", "ncd_id", "ncd_vrsn_num"),
        comment="MCD export member ncd_trkg.csv (ncd)",
    )

    op.create_table(
        "mcd_ncd_trkg_bnft_xref",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ncd_id", sa.Integer, nullable=False),
        sa.Column("ncd_vrsn_num", sa.Integer, nullable=False),
        sa.Column("bnft_ctgry_cd", sa.Integer, nullable=False),
        sa.Column("creatd_tmstmp", sa.DateTime),
        sa.Column("last_updt_tmstmp", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "ncd_id", "ncd_vrsn_num", "bnft_ctgry_cd"),
        comment="MCD export member ncd_trkg_bnft_xref.csv (ncd)",
    )

    op.create_table(
        "mcd_reason_change_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("reason_change_id", sa.Integer, nullable=False),
        sa.Column("reason_change_version", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("last_updated", sa.DateTime),
        sa.Column("sort_order", sa.Integer),
        sa.PrimaryKeyConstraint("release_id", "reason_change_id", "reason_change_version"),
        comment="MCD export member reason_change_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_region_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("region_id", sa.Integer, nullable=False),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "region_id"),
        comment="MCD export member region_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_state_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("state_id", sa.Integer, nullable=False),
        sa.Column("state_abbrev", sa.Text),
        sa.Column("description", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "state_id"),
        comment="MCD export member state_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_state_x_region",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("state_id", sa.Integer, nullable=False),
        sa.Column("region_id", sa.Integer),
        sa.PrimaryKeyConstraint("release_id", "state_id"),
        comment="MCD export member state_x_region.csv (lcd)",
    )

    op.create_table(
        "mcd_synopsis_changes_fields_lookup",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("synopsis_changes_field_id", sa.Integer, nullable=False),
        sa.Column("field_name", sa.Text),
        sa.Column("field_anchor", sa.Text),
        sa.Column("mcd_field_name", sa.Text),
        sa.Column("mcd_field_anchor", sa.Text),
        sa.PrimaryKeyConstraint("release_id", "synopsis_changes_field_id"),
        comment="MCD export member synopsis_changes_fields_lookup.csv (lcd)",
    )

    op.create_table(
        "mcd_update_period",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("period_id", sa.Integer, nullable=False),
        sa.Column("begin_date", sa.DateTime),
        sa.Column("dis_end_date", sa.DateTime),
        sa.PrimaryKeyConstraint("release_id", "period_id"),
        comment="MCD export member update_period.csv (lcd)",
    )

    op.create_table(
        "ncd",
        sa.Column("release_id", sa.Integer, sa.ForeignKey("release.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ncd_id", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("section", sa.Text),
        sa.Column("title", sa.Text),
        sa.Column("is_coverage_provision", sa.Boolean),
        sa.Column("coverage_level_code", sa.Integer),
        sa.Column("coverage_level", sa.Text),
        sa.Column("is_lab", sa.Boolean),
        sa.Column("under_review", sa.Boolean),
        sa.Column("effective_date", sa.Date),
        sa.Column("implementation_date", sa.Date),
        sa.Column("termination_date", sa.Date),
        sa.Column("description", sa.Text),
        sa.Column("indications_limitations", sa.Text),
        sa.Column("cross_reference", sa.Text),
        sa.Column("other", sa.Text),
        sa.Column("revision_history", sa.Text),
        sa.Column("keywords", sa.Text),
        sa.Column("transmittal_number", sa.Integer),
        sa.Column("transmittal_issued_date", sa.Date),
        sa.Column("transmittal_url", sa.Text),
        sa.Column("change_request_number", sa.Integer),
        sa.Column("publication_code", sa.Integer),
        sa.Column("created_at", sa.DateTime),
        sa.Column("last_changed_at", sa.DateTime),
        sa.Column("is_current", sa.Boolean),
        sa.PrimaryKeyConstraint("release_id", "ncd_id", "version"),
        comment="One row per NCD version, narratives as clean text",
    )
    op.create_index("ncd_section", "ncd", ["section"])


def downgrade() -> None:
    op.drop_table("ncd")
    op.drop_table("mcd_update_period")
    op.drop_table("mcd_synopsis_changes_fields_lookup")
    op.drop_table("mcd_state_x_region")
    op.drop_table("mcd_state_lookup")
    op.drop_table("mcd_region_lookup")
    op.drop_table("mcd_reason_change_lookup")
    op.drop_table("mcd_ncd_trkg_bnft_xref")
    op.drop_table("mcd_ncd_trkg")
    op.drop_table("mcd_ncd_pblctn_ref")
    op.drop_table("mcd_ncd_bnft_ctgry_ref")
    op.drop_table("mcd_lcd_x_urls")
    op.drop_table("mcd_lcd_x_synopsis_changes_fields")
    op.drop_table("mcd_lcd_x_sticky_note")
    op.drop_table("mcd_lcd_x_revision_history")
    op.drop_table("mcd_lcd_x_requestor_letters")
    op.drop_table("mcd_lcd_x_reason_change")
    op.drop_table("mcd_lcd_x_primary_jurisdiction")
    op.drop_table("mcd_lcd_x_hcpc_code_group")
    op.drop_table("mcd_lcd_x_hcpc_code")
    op.drop_table("mcd_lcd_x_contractor")
    op.drop_table("mcd_lcd_x_advisory_committee")
    op.drop_table("mcd_lcd_url_type_lookup")
    op.drop_table("mcd_lcd_related_source_icd9")
    op.drop_table("mcd_lcd_related_ncd_documents")
    op.drop_table("mcd_lcd_related_documents")
    op.drop_table("mcd_lcd_future_retire")
    op.drop_table("mcd_lcd")
    op.drop_table("mcd_draft_contact_lookup")
    op.drop_table("mcd_dmerc_region_lookup")
    op.drop_table("mcd_contractor_type_lookup")
    op.drop_table("mcd_contractor_subtype_lookup")
    op.drop_table("mcd_contractor_oversight")
    op.drop_table("mcd_contractor_jurisdiction")
    op.drop_table("mcd_contractor")
    op.drop_table("mcd_article_x_urls")
    op.drop_table("mcd_article_x_sticky_note")
    op.drop_table("mcd_article_x_revision_history")
    op.drop_table("mcd_article_x_revenue_code")
    op.drop_table("mcd_article_x_response_to_comment")
    op.drop_table("mcd_article_x_primary_jurisdiction")
    op.drop_table("mcd_article_x_other_coding_group")
    op.drop_table("mcd_article_x_icd10_pcs_code_group")
    op.drop_table("mcd_article_x_icd10_pcs_code")
    op.drop_table("mcd_article_x_icd10_noncovered_group")
    op.drop_table("mcd_article_x_icd10_noncovered")
    op.drop_table("mcd_article_x_icd10_covered_group")
    op.drop_table("mcd_article_x_icd10_covered")
    op.drop_table("mcd_article_x_hcpc_modifier_group")
    op.drop_table("mcd_article_x_hcpc_modifier")
    op.drop_table("mcd_article_x_hcpc_code_group")
    op.drop_table("mcd_article_x_hcpc_code")
    op.drop_table("mcd_article_x_contractor")
    op.drop_table("mcd_article_x_code_table")
    op.drop_table("mcd_article_x_bill_code")
    op.drop_table("mcd_article_url_type_lookup")
    op.drop_table("mcd_article_type_lookup")
    op.drop_table("mcd_article_related_source_icd9")
    op.drop_table("mcd_article_related_ncd_documents")
    op.drop_table("mcd_article_related_documents")
    op.drop_table("mcd_article_future_retire")
    op.drop_table("mcd_article")
