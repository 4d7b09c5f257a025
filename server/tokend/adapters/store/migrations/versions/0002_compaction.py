"""Compaction that keeps everything: messages taken out of the live context are marked (by the
summary that covers them, or by a rewind), and tool outputs a gate kept out of a message are
stored whole beside it.

Sessions compacted before this revision started their window at their newest summary: the
messages before it are marked as covered by the first summary after them, so the live
context of every session stays what it was.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

Timestamp = sa.DateTime(timezone=True)

_COVERING_SUMMARY = """
    SELECT s.{column} FROM messages s
    WHERE s.session_id = messages.session_id AND s.summary = {true} AND s.seq > messages.seq
    ORDER BY s.seq LIMIT 1
"""


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("compacted_at", Timestamp, nullable=True))
        batch.add_column(sa.Column("compacted_by", sa.Text(), nullable=True))
    op.create_table(
        "tool_outputs",
        sa.Column("session_id", sa.Text(), sa.ForeignKey("sessions.id"), primary_key=True),
        sa.Column("ref", sa.String(80), primary_key=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
    )
    true = "true" if op.get_bind().dialect.name == "postgresql" else "1"
    op.execute(
        f"""
        UPDATE messages SET
            compacted_by = ({_COVERING_SUMMARY.format(column="id", true=true)}),
            compacted_at = ({_COVERING_SUMMARY.format(column="created_at", true=true)})
        WHERE EXISTS (
            SELECT 1 FROM messages s
            WHERE s.session_id = messages.session_id AND s.summary = {true} AND s.seq > messages.seq
        )
        """
    )


def downgrade() -> None:
    op.drop_table("tool_outputs")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("compacted_by")
        batch.drop_column("compacted_at")
