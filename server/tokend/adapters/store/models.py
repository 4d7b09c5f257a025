"""The store's tables as typed SQLAlchemy models. The schema itself is created by the Alembic
migrations in `migrations/versions`; these models must describe the same columns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    TypeDecorator,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored in UTC; always read back aware (UTC).

    Naive datetimes are refused: the store cannot know which zone they meant.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()}: pass a timezone-aware one")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:  # SQLite keeps no zone: what we wrote was UTC
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# JSON whose Python None is SQL NULL (not the JSON text "null").
NullableJSON = JSON(none_as_null=True)


class Base(DeclarativeBase):
    pass


def table_of(model: type[Base]) -> Table:
    """The Core table of a mapped class: the same object as `model.__table__`, which
    SQLAlchemy types as a FromClause (so `insert`/`update` of it would not type-check)."""
    return Base.metadata.tables[model.__tablename__]


class SessionRow(Base):
    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    workspace_uri: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str] = mapped_column(Text)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("sessions.id"))
    context_window: Mapped[int | None] = mapped_column(Integer)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    compacted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # Moved by every change in the change's transaction (compare-and-set): one owner of
    # each version, whichever daemon made the change.
    version: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    # The session's own figures (core.types.SessionFigures), rewritten by each change in its
    # transaction; `extra` holds the client's keys alone (migration 0005).
    compactions: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    rewinds: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    measured: Mapped[dict[str, int] | None] = mapped_column(NullableJSON)  # category -> tokens
    measured_exact: Mapped[bool] = mapped_column(Boolean, server_default=true())
    estimate_errors: Mapped[list[list[int]] | None] = mapped_column(NullableJSON)  # [[p, a]]
    anchor_message_id: Mapped[str | None] = mapped_column(Text)
    anchor_delta_tokens: Mapped[int | None] = mapped_column(Integer)
    # The gauge as of the last change (for listings; all NULL: not stored, load the session).
    gauge_used_tokens: Mapped[int | None] = mapped_column(Integer)
    gauge_used_percentage: Mapped[float | None] = mapped_column(Float)
    gauge_context_window: Mapped[int | None] = mapped_column(Integer)
    gauge_estimated: Mapped[bool | None] = mapped_column(Boolean)
    gauge_version: Mapped[int | None] = mapped_column(BigInteger)
    gauge_model: Mapped[str | None] = mapped_column(Text)
    # What the gauge needs besides message bodies (core.session.gauge_state; migration 0006).
    gauge_state: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON)
    chat_files: Mapped[list[dict[str, Any]] | None] = mapped_column(NullableJSON)
    transcript_cursor: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON)
    forked_from: Mapped[str | None] = mapped_column(Text)
    handoff_from: Mapped[str | None] = mapped_column(Text)
    goal: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ix_sessions_workspace_updated", "workspace_uri", "updated_at"),)


class MessageRow(Base):
    __tablename__ = "messages"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"))
    seq: Mapped[int] = mapped_column(Integer)  # 1, 2, 3... per session, in append order
    role: Mapped[str] = mapped_column(String(16))
    model: Mapped[str | None] = mapped_column(Text)
    usage: Mapped[dict[str, int] | None] = mapped_column(NullableJSON)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    summary: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # Out of the live context (kept): covered by the summary message `compacted_by`, or
    # taken out by a rewind ("rewind").
    compacted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    compacted_by: Mapped[str | None] = mapped_column(Text)
    version: Mapped[int | None] = mapped_column(BigInteger)  # the version its append made
    tokens: Mapped[int | None] = mapped_column(Integer)  # its count when appended

    __table_args__ = (
        # Orders a session's messages and makes seq unique per session.
        Index("ix_messages_session_seq", "session_id", "seq", unique=True),
        # Finds the newest compaction boundary without scanning the session.
        Index("ix_messages_session_summary_seq", "session_id", "summary", "seq"),
    )


class PartRow(Base):
    __tablename__ = "parts"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"))
    idx: Mapped[int] = mapped_column(Integer)  # 0-based order within the message
    kind: Mapped[str] = mapped_column(String(16))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    tokens: Mapped[int | None] = mapped_column(Integer)
    compacted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)

    __table_args__ = (Index("ix_parts_message_idx", "message_id", "idx", unique=True),)


class ToolOutputRow(Base):
    """A tool output a gate kept out of its message, whole; `ref` is "sha256:<hex>" of its
    UTF-8 text, `chars` its length in characters."""

    __tablename__ = "tool_outputs"

    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    ref: Mapped[str] = mapped_column(String(80), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    chars: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class BlobChunkRow(Base):
    """One chunk of a long text stored in pieces (blobs.py): the text's content address
    ("sha256:<hex>" of its UTF-8 bytes), the chunk's order, the character offset it starts
    at, its length in characters and its text."""

    __tablename__ = "blob_chunks"

    ref: Mapped[str] = mapped_column(String(80), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger)
    chars: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)


class TokenCacheRow(Base):
    __tablename__ = "token_cache"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)  # "<counter>:<sha256 hex>"
    tokens: Mapped[int] = mapped_column(Integer)


class CalibrationRow(Base):
    __tablename__ = "calibration"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
