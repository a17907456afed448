"""Alembic's environment for the results store: always run by ``harness.history.store`` on
a connection it opened (``config.attributes["connection"]``), never from a command line."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

# An arbitrary constant: the PostgreSQL advisory lock that serialises migrations of one
# database, so two hosts opening a fresh store at once do not both create its tables.
_MIGRATION_LOCK = 0x6E707568


def run_migrations() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=False)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        context.run_migrations()


run_migrations()
