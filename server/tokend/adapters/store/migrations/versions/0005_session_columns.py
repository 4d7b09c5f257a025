"""The session's own figures in columns of their own; `extra` keeps the client's keys alone.

Before, the session's owner wrote its figures into the free-form `extra` JSON beside whatever a
client put there: compactions, rewinds, the measured context (`measured`, `measuredExact`), the
estimate errors (`errors`), a prune's delta on the anchor (`anchorDelta`), the gauge for listings
(`gauge`), the chat files (`workspaceFiles`), the transcript cursor (`transcript`), and a fork's
or handoff's lineage (`forkedFrom`, `handoffFrom`, `goal`); `measuredChanges` was an older count.
Each gets a typed column of the sessions row (not a table of its own: every change already
updates that row, in the same statement, under the same lock, and a listing reads the gauge
without a join). Existing rows are moved over, value by value; a value of the wrong type is
dropped (the figure falls back to its default, and a gauge missing any figure is left NULL, so
the listing loads the session once and shows its live figures).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

INTERNAL_KEYS = (
    "compactions",
    "rewinds",
    "measured",
    "measuredExact",
    "measuredChanges",
    "errors",
    "anchorDelta",
    "gauge",
    "workspaceFiles",
    "transcript",
    "forkedFrom",
    "handoffFrom",
    "goal",
)


def _columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("compactions", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("rewinds", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("measured", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("measured_exact", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("estimate_errors", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("anchor_message_id", sa.Text(), nullable=True),
        sa.Column("anchor_delta_tokens", sa.Integer(), nullable=True),
        sa.Column("gauge_used_tokens", sa.Integer(), nullable=True),
        sa.Column("gauge_used_percentage", sa.Float(), nullable=True),
        sa.Column("gauge_context_window", sa.Integer(), nullable=True),
        sa.Column("gauge_estimated", sa.Boolean(), nullable=True),
        sa.Column("gauge_version", sa.BigInteger(), nullable=True),
        sa.Column("gauge_model", sa.Text(), nullable=True),
        sa.Column("chat_files", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("transcript_cursor", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("forked_from", sa.Text(), nullable=True),
        sa.Column("handoff_from", sa.Text(), nullable=True),
        sa.Column("goal", sa.Text(), nullable=True),
    ]


def _sessions() -> sa.TableClause:
    return sa.table(
        "sessions",
        sa.column("id", sa.Text()),
        sa.column("extra", sa.JSON()),
        *(sa.column(c.name, c.type) for c in _columns()),
    )


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def columns_of(extra: dict[str, Any]) -> dict[str, Any]:
    """The typed columns an old row's `extra` holds values for (malformed ones left out)."""
    columns: dict[str, Any] = {
        "compactions": _count(extra.get("compactions")) or 0,
        "rewinds": _count(extra.get("rewinds")) or 0,
        "forked_from": _text(extra.get("forkedFrom")),
        "handoff_from": _text(extra.get("handoffFrom")),
        "goal": _text(extra.get("goal")),
    }
    measured = extra.get("measured")
    if isinstance(measured, dict):
        columns["measured"] = {k: v for k, v in measured.items() if _count(v) is not None}
    if isinstance(extra.get("measuredExact"), bool):
        columns["measured_exact"] = extra["measuredExact"]
    errors = extra.get("errors")
    if isinstance(errors, list):
        columns["estimate_errors"] = [
            e
            for e in errors
            if isinstance(e, list) and len(e) == 2 and all(_count(v) is not None for v in e)
        ]
    anchor = extra.get("anchorDelta")
    if isinstance(anchor, dict) and _text(anchor.get("messageId")) is not None:
        tokens = anchor.get("tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            columns["anchor_message_id"] = anchor["messageId"]
            columns["anchor_delta_tokens"] = tokens
    columns.update(_gauge_columns(extra.get("gauge")))
    files = extra.get("workspaceFiles")
    if isinstance(files, list):
        kept = [
            {"path": f["path"], "readOnly": bool(f.get("readOnly"))}
            for f in files
            if isinstance(f, dict) and isinstance(f.get("path"), str)
        ]
        columns["chat_files"] = kept or None
    if isinstance(extra.get("transcript"), dict):
        columns["transcript_cursor"] = extra["transcript"]
    return columns


def _gauge_columns(gauge: Any) -> dict[str, Any]:
    """A gauge with every figure (an older one without `estimated` is not: left NULL)."""
    if not isinstance(gauge, dict):
        return {}
    used, window, pct = (
        gauge.get("usedTokens"),
        gauge.get("contextWindow"),
        gauge.get("usedPercentage"),
    )
    estimated = gauge.get("estimated")
    if not isinstance(pct, int | float) or isinstance(pct, bool):
        return {}
    if _count(used) is None or _count(window) is None or not isinstance(estimated, bool):
        return {}
    return {
        "gauge_used_tokens": used,
        "gauge_used_percentage": float(pct),
        "gauge_context_window": window,
        "gauge_estimated": estimated,
        "gauge_version": _count(gauge.get("version")),
        "gauge_model": _text(gauge.get("model")),
    }


def upgrade() -> None:
    # Plain ADD COLUMNs (nullable, or with a constant default): no table rebuild on SQLite.
    for column in _columns():
        op.add_column("sessions", column)
    if context.is_offline_mode():  # SQL text only: there are no rows to move
        return
    bind = op.get_bind()
    sessions = _sessions()
    for session_id, extra in bind.execute(sa.select(sessions.c.id, sessions.c.extra)).all():
        if not isinstance(extra, dict) or not any(key in extra for key in INTERNAL_KEYS):
            continue
        client = {k: v for k, v in extra.items() if k not in INTERNAL_KEYS}
        bind.execute(
            sa.update(sessions)
            .where(sessions.c.id == session_id)
            .values(extra=client, **columns_of(extra))
        )


def downgrade() -> None:
    """The figures back into `extra` (as the code before 0005 wrote them), then the columns
    dropped."""
    if not context.is_offline_mode():
        bind = op.get_bind()
        sessions = _sessions()
        for row in bind.execute(sa.select(sessions)).mappings().all():
            extra = dict(row["extra"] or {})
            extra.update(_extra_of(row))
            bind.execute(sa.update(sessions).where(sessions.c.id == row["id"]).values(extra=extra))
    # ALTER TABLE ... DROP COLUMN (SQLite has it since 3.35, and the columns are plain): a
    # copy of the table would trip the messages' foreign keys on it.
    with op.batch_alter_table("sessions", recreate="never") as batch:
        for column in reversed(_columns()):
            batch.drop_column(column.name)


def _extra_of(row: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "compactions": row["compactions"],
        "rewinds": row["rewinds"],
        "measured": row["measured"] or {},
        "measuredExact": bool(row["measured_exact"]),
        "errors": row["estimate_errors"] or [],
    }
    if row["anchor_message_id"] is not None:
        extra["anchorDelta"] = {
            "messageId": row["anchor_message_id"],
            "tokens": row["anchor_delta_tokens"],
        }
    if row["gauge_used_tokens"] is not None:
        extra["gauge"] = {
            "usedTokens": row["gauge_used_tokens"],
            "usedPercentage": row["gauge_used_percentage"],
            "contextWindow": row["gauge_context_window"],
            "estimated": row["gauge_estimated"],
            "version": row["gauge_version"],
            "model": row["gauge_model"],
        }
    named = {
        "workspaceFiles": row["chat_files"],
        "transcript": row["transcript_cursor"],
        "forkedFrom": row["forked_from"],
        "handoffFrom": row["handoff_from"],
        "goal": row["goal"],
    }
    extra.update({k: v for k, v in named.items() if v is not None})
    return extra
