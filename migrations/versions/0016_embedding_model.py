"""embedding_model: which model and backend made each chunk vector; medrag_deferred_index: graphs rebuilt after a fill.

A vector is reused (by content hash) or kept only when the model and backend that made it are the ones configured
now: a change of either re-embeds instead of mixing vectors of two spaces. Vectors made before this revision
record no model, so the next refresh embeds them again once.

Revision ID: 0016
Revises: 0015
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE embedding_model (
            id smallserial PRIMARY KEY,
            name text NOT NULL,
            digest text NOT NULL,
            backend text NOT NULL,
            export_format text NOT NULL DEFAULT '',
            dimension integer NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (name, digest, backend, export_format)
        )""")
    op.execute("ALTER TABLE chunk ADD COLUMN embedding_model_id smallint REFERENCES embedding_model (id)")
    # A vector-graph index dropped for a bulk fill, with the statement that rebuilds it: a stage killed between
    # the two leaves the definition here, and the next embedding stage rebuilds it.
    op.execute("""
        CREATE TABLE medrag_deferred_index (
            name text PRIMARY KEY,
            definition text NOT NULL,
            deferred_at timestamptz NOT NULL DEFAULT now()
        )""")


def downgrade() -> None:
    # a graph still deferred is rebuilt first: the table that knows how is about to go
    op.execute("""
        DO $$
        DECLARE deferred record;
        BEGIN
            FOR deferred IN SELECT definition FROM medrag_deferred_index LOOP
                EXECUTE deferred.definition;
            END LOOP;
        END $$""")
    op.execute("DROP TABLE medrag_deferred_index")
    op.execute("ALTER TABLE chunk DROP COLUMN embedding_model_id")
    op.execute("DROP TABLE embedding_model")
