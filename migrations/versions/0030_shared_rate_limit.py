"""The API's rate limit shared by every server process and replica: one token bucket per client in PostgreSQL.

medrag_take_token (sql/serve.sql) takes a token in one INSERT ... ON CONFLICT DO UPDATE ... RETURNING, so two API
processes (uvicorn workers, replicas behind a proxy) see one bucket per client. UNLOGGED: a bucket is worth nothing
after a crash (a full bucket is what a client gets anyway after a minute idle), and not writing it to the WAL keeps
a request's write cheap and off a streaming replica.

Revision ID: 0030
Revises: 0029
"""

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE UNLOGGED TABLE medrag_rate_bucket (
        client text PRIMARY KEY,  -- the client's address, as the API sees it (MEDRAG_TRUSTED_PROXIES)
        tokens double precision NOT NULL,  -- left after the last request
        seen timestamptz NOT NULL,  -- the last request
        granted boolean NOT NULL  -- whether the last request took a token
    )""")


def downgrade() -> None:
    op.execute("DROP TABLE medrag_rate_bucket")
