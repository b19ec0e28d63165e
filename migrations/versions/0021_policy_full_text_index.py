"""chunk_policy_tsv_gin: a full-text index over the chunks of policy documents only.

An answer asks, for each of its candidate sentences, how many other determinations hold its first eight words
(medrag.answer.scoring.repeated_elsewhere: boilerplate shared by many is seldom what was asked). Through the index
over every chunk, each probe intersected posting lists that the 55,000 code documents fill with common words: about
1 ms a probe, 53 ms a question. Over the 4,000 policy chunks alone: 0.02 ms a probe, 6 ms a question.

Revision ID: 0021
Revises: 0020
"""

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # the code document sources of this revision (a query that excludes more sources is still covered)
    op.execute("CREATE INDEX chunk_policy_tsv_gin ON chunk USING gin (tsv) "
               "WHERE source <> ALL ('{hcpcs,icd10cm}'::text[])")


def downgrade() -> None:
    op.execute("DROP INDEX chunk_policy_tsv_gin")
