"""INSERT ... ON CONFLICT in the dialect of a session's database (SQLite and PostgreSQL both
have it): what daemons sharing a database need when two of them write the same key at once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import Session

from tokend.core.errors import StoreError


def insert_for(session: Session, table: Table) -> Any:
    """`insert(table)` of the session's dialect, which has on_conflict_do_nothing/_update."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise StoreError(f"tokend's store supports SQLite and PostgreSQL, not {dialect}")
