"""Alembic environment for tokend's store.

tokend runs migrations itself (`tokend.adapters.store.engine.upgrade_to_head`), handing over an
open connection in `config.attributes["connection"]` that is already inside a transaction; the
migrations then commit or roll back with it. Without one (a developer running alembic by hand
with a Config whose `sqlalchemy.url` is set), an engine is made from that URL.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from tokend.adapters.store.engine import create_store_engine
from tokend.adapters.store.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only ALTER through table copies
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection given and no sqlalchemy.url set")
    engine = create_store_engine(url)
    try:
        with engine.connect() as connection, connection.begin():
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
