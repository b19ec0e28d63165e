"""The database surface: Alembic revisions, then the repeatable SQL scripts, some rendered from the Python rules."""
