"""Alembic environment: the URL comes from medrag (DATABASE_URL or the embedded server), never from alembic.ini."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from medrag.core.db import database_url
from medrag.core.models import Base

target_metadata = Base.metadata


def run_migrations_offline() -> None:
    """Emit SQL to stdout without a live database (alembic upgrade --sql)."""
    url = context.config.get_main_option("sqlalchemy.url") or database_url()
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run migrations against the live database, each in its own transaction."""
    url = context.config.get_main_option("sqlalchemy.url") or database_url()
    engine = create_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
