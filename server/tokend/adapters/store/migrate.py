"""The store's schema migrations, run with Alembic from code: a Config built here (no alembic.ini
file), so they work from an installed package. Imported only when a database is not at the newest
revision (adapters.store.engine.upgrade_to_head reads it with plain SQL).

Mako, which Alembic renders its script templates with, highlights its own HTML error pages with
Pygments when Pygments can be imported (about 4.4 MiB of lexers and styles); tokend renders
no template and shows no such page, so Mako is given its plain fallback (mako.exceptions
falls back when the plugin's import fails, as it does without Pygments installed).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.modules.setdefault("mako.ext.pygmentplugin", None)  # type: ignore[arg-type]  # (see above)

from alembic import command  # noqa: E402  # (after the line above)
from alembic.config import Config  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402
from sqlalchemy import Connection, Engine, text  # noqa: E402

from tokend.core.errors import StoreError  # noqa: E402

# Every daemon migrating one PostgreSQL database takes this transaction-level advisory lock first:
# the first runs the migrations, the others wait, then find the schema at head.
MIGRATION_LOCK_KEY = 0x746F6B656E64  # "tokend"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """The equivalent of alembic.ini, built in code. `connection` (inside a transaction) is used
    by migrations/env.py when given; otherwise `url`."""
    config = Config(stdout=sys.stderr)  # never stdout: it is the JSON-RPC wire
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


@functools.cache
def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revisions() -> frozenset[str]:
    """The revisions the code's migrations end at, as Alembic reads the scripts."""
    return frozenset(_script().get_heads())


def alembic_revisions(connection: Connection) -> frozenset[str]:
    """The revisions the database is at, as Alembic reads them (empty for a new database)."""
    return frozenset(MigrationContext.configure(connection).get_current_heads())


def upgrade(engine: Engine) -> bool:
    """Migrate the database to the newest revision in one write transaction (`engine`: marked
    as a writer; the module that calls it, adapters.store.engine, says how concurrent openers
    wait); True when migrations ran."""
    heads = head_revisions()
    with engine.connect() as connection, connection.begin():
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        current = alembic_revisions(connection)
        if current == heads:
            return False
        known = {script.revision for script in _script().walk_revisions()}
        unknown = current - known
        if unknown:
            raise StoreError(
                f"the database schema is at revision {sorted(unknown)}, unknown to this tokend "
                "(made by a newer version?); upgrade tokend or use another database"
            )
        command.upgrade(alembic_config(connection), "head")
    return True
