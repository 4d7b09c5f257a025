"""The session store: SQLAlchemy models, Alembic migrations and `SqlStore`."""

from tokend.adapters.store.rows import new_id
from tokend.adapters.store.sql_store import SqlStore
from tokend.adapters.store.url import resolve_database_url

__all__ = ["SqlStore", "new_id", "resolve_database_url"]
