"""Initial schema: sessions, messages, parts, token_cache, calibration.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Timestamps are UTC; SQLite keeps them as text, PostgreSQL as timestamptz.
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("workspace_uri", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("parent_id", sa.Text(), sa.ForeignKey("sessions.id"), nullable=True),
        sa.Column("context_window", sa.Integer(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.Column("compacted_at", Timestamp, nullable=True),
        sa.Column("deleted_at", Timestamp, nullable=True),
    )
    op.create_index("ix_sessions_workspace_updated", "sessions", ["workspace_uri", "updated_at"])

    op.create_table(
        "messages",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("session_id", sa.Text(), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("usage", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("summary", sa.Boolean(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("completed_at", Timestamp, nullable=True),
    )
    op.create_index("ix_messages_session_seq", "messages", ["session_id", "seq"], unique=True)
    op.create_index("ix_messages_session_summary_seq", "messages", ["session_id", "summary", "seq"])

    op.create_table(
        "parts",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("message_id", sa.Text(), sa.ForeignKey("messages.id"), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("compacted_at", Timestamp, nullable=True),
    )
    op.create_index("ix_parts_message_idx", "parts", ["message_id", "idx"], unique=True)

    op.create_table(
        "token_cache",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
    )

    op.create_table(
        "calibration",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("calibration")
    op.drop_table("token_cache")
    op.drop_index("ix_parts_message_idx", table_name="parts")
    op.drop_table("parts")
    op.drop_index("ix_messages_session_summary_seq", table_name="messages")
    op.drop_index("ix_messages_session_seq", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_sessions_workspace_updated", table_name="sessions")
    op.drop_table("sessions")
