"""Session versions allocated by the database.

`sessions.version` is the session's version, moved by every change in the change's own
transaction (compare-and-set on the row), so daemons sharing one database hand out each
version once and refuse a stale `ifVersion`. `messages.version` is the version its append
made and `messages.tokens` its count: a retried append with the same client-chosen id
answers the same.

Existing sessions get the version their loading derived before: one per message, plus the
compactions, measured-context changes and rewinds counted in `extra`.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_DERIVED_FROM_EXTRA = ("compactions", "measuredChanges", "rewinds")


def upgrade() -> None:
    # Plain ADD COLUMN (SQLite has it for a column with a constant default): no table rebuild.
    op.add_column(
        "sessions",
        sa.Column("version", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )
    op.add_column("messages", sa.Column("version", sa.BigInteger(), nullable=True))
    op.add_column("messages", sa.Column("tokens", sa.Integer(), nullable=True))
    if context.is_offline_mode():  # SQL text only: there are no rows to backfill
        return
    bind = op.get_bind()
    sessions = sa.table(
        "sessions", sa.column("id", sa.Text()), sa.column("extra", sa.JSON()), sa.column("version")
    )
    messages = sa.table("messages", sa.column("session_id", sa.Text()))
    counts: dict[str, int] = dict(
        bind.execute(
            sa.select(messages.c.session_id, sa.func.count()).group_by(messages.c.session_id)
        ).all()
    )
    for session_id, extra in bind.execute(sa.select(sessions.c.id, sessions.c.extra)).all():
        extra = extra if isinstance(extra, dict) else {}
        derived = int(counts.get(session_id, 0))
        for key in _DERIVED_FROM_EXTRA:
            value = extra.get(key, 0)
            derived += value if isinstance(value, int) and not isinstance(value, bool) else 0
        if derived:
            bind.execute(
                sa.update(sessions).where(sessions.c.id == session_id).values(version=derived)
            )


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("tokens")
        batch.drop_column("version")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("version")
