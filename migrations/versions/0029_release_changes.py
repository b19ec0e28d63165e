"""What each release changed, as data: change sets between releases (and within one export) and their changes;
the CDC addenda of an ICD-10-CM release, to cross-check them.

A change set is one comparison: (source, from release, to release), or a release with no "from" for the changes an
export dates itself (an NCD that took effect, was revised or retired on a date). Each change names its item, what
changed and, where a coder's code list should find it, the codes it touches. The refresh writes them
(medrag.refresh.changes); `medrag changes`, GET /changes and v_release_changes read them.

Revision ID: 0029
Revises: 0028
"""

from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

TABLES = (
    """
    CREATE TABLE release_change_set (
        id serial PRIMARY KEY,
        source text NOT NULL,
        from_release_id integer REFERENCES release(id) ON DELETE CASCADE,  -- NULL: the export's own dated changes
        to_release_id integer NOT NULL REFERENCES release(id) ON DELETE CASCADE,
        changes_format integer NOT NULL,  -- the source's medrag.sources.<name>.changes.FORMAT that computed it
        computed_at timestamptz NOT NULL DEFAULT now(),
        seconds double precision,
        counts jsonb NOT NULL DEFAULT '{}'::jsonb,  -- {change: rows}
        notes jsonb NOT NULL DEFAULT '[]'::jsonb,  -- sentences: what was not compared, disagreements with addenda
        CONSTRAINT release_change_set_pair UNIQUE NULLS NOT DISTINCT (source, from_release_id, to_release_id)
    )""",
    """
    CREATE TABLE release_change (
        id bigserial PRIMARY KEY,
        change_set_id integer NOT NULL REFERENCES release_change_set(id) ON DELETE CASCADE,
        item_kind text NOT NULL,  -- hcpcs, icd10cm, ncd, lcd, iom
        item text NOT NULL,  -- a code, an NCD's section (210.15), an LCD (L33822), a manual section (100-02 15 20.1)
        change text NOT NULL,  -- added, removed, terminated, redescribed, became_header, revised, took_effect, ...
        field text,  -- the column that changed, where one did
        old_value text,
        new_value text,
        effective_date date,  -- when the change takes effect, where the release says
        title text,  -- the item's description or title (the newer one)
        codes text[] NOT NULL DEFAULT '{}',  -- the codes it touches: itself, or the codes a determination lists
        detail jsonb NOT NULL DEFAULT '{}'::jsonb  -- sentences added and removed, a revision-history entry, ...
    )""",
    "CREATE INDEX release_change_change_set ON release_change (change_set_id, item_kind, change, item)",
    "CREATE INDEX release_change_codes ON release_change USING gin (codes)",
    """
    CREATE TABLE icd10cm_addenda (
        release_id integer NOT NULL REFERENCES release(id) ON DELETE CASCADE,
        line integer NOT NULL,
        action text NOT NULL CHECK (action IN ('add', 'delete', 'revise_from', 'revise_to')),
        code text NOT NULL,
        billable boolean NOT NULL,
        short_description text,
        long_description text,
        PRIMARY KEY (release_id, line)
    )""",
)


def upgrade() -> None:
    for statement in TABLES:
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP TABLE icd10cm_addenda")
    op.execute("DROP TABLE release_change")
    op.execute("DROP TABLE release_change_set")
