"""A denser graph for ICD-10-CM and today's ranking in medrag_search.

ICD-10-CM is 47k short, near-duplicate descriptions: with m 16 / ef_construction 200 its graph gave recall@10 0.91
against exact search (dev questions, source=icd10cm, ef_search 200) and never reached "Zoster without complications"
from "shingles with no complications" at any ef_search; m 24 / ef_construction 400, built without parallel workers,
gives 0.96 and finds it. The build takes ~45 s on two cores. medrag_search's query cues ("no complications",
"diagnosis code") and the plans kept per session (plan_cache_mode) are in sql/search.sql.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _build_icd10cm_index(m: int, ef_construction: int) -> None:
    op.execute("SET LOCAL maintenance_work_mem = '1GB'")
    # one worker: of two m 32 builds of this graph, the serial one reached the zoster codes and the parallel one not
    op.execute("SET LOCAL max_parallel_maintenance_workers = 0")
    op.execute("DROP INDEX IF EXISTS chunk_embedding_icd10cm_hnsw")
    op.execute("CREATE INDEX chunk_embedding_icd10cm_hnsw ON chunk USING hnsw (embedding vector_cosine_ops) "
               f"WITH (m = {m}, ef_construction = {ef_construction}) WHERE source = 'icd10cm'")


def upgrade() -> None:
    _build_icd10cm_index(24, 400)


def downgrade() -> None:
    _build_icd10cm_index(16, 200)
