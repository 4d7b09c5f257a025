"""The session row's typed columns <-> SessionInfo: the one place that reads and writes them.

The figures a reload needs (compactions, rewinds, the measured context, the estimate errors, a
prune's delta on the anchor), the gauge listings show, the chat files, the transcript cursor and
the lineage of forks and handoffs each have a column of their own (migration 0005); `extra`
keeps the client's keys alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, update
from sqlalchemy.orm import Session

from tokend.adapters.store.models import SessionRow, table_of
from tokend.adapters.store.rows import new_id
from tokend.core.commit import SessionFields
from tokend.core.errors import SessionNotFound
from tokend.core.types import (
    AnchorDelta,
    ChatFile,
    EstimateError,
    SessionFigures,
    SessionGauge,
    SessionInfo,
)


def set_fields(session: Session, session_id: str, fields: SessionFields) -> None:
    """Write a commit's `fields` to the session's row (SessionNotFound: no such row). A change
    that sets the figures alone (most of them: every append) runs one statement built once."""
    columns = fields_columns(fields)
    if not columns:
        return
    if columns.keys() == FIGURE_COLUMNS:
        statement, params = UPDATE_FIGURES, {"row_id": session_id, **columns}
    else:
        table = table_of(SessionRow)
        statement, params = update(table).where(table.c.id == session_id).values(columns), {}
    if cast(CursorResult[Any], session.execute(statement, params)).rowcount != 1:
        raise SessionNotFound(f"session {session_id} not found")


def figures_columns(figures: SessionFigures) -> dict[str, Any]:
    """The columns that hold `figures`, by name."""
    anchor, gauge = figures.anchor_delta, figures.gauge
    return {
        "compactions": figures.compactions,
        "rewinds": figures.rewinds,
        "measured": dict(figures.measured),
        "measured_exact": figures.measured_exact,
        "estimate_errors": [[e.predicted, e.actual] for e in figures.errors],
        "anchor_message_id": anchor.message_id if anchor else None,
        "anchor_delta_tokens": anchor.tokens if anchor else None,
        "gauge_used_tokens": gauge.used_tokens if gauge else None,
        "gauge_used_percentage": gauge.used_percentage if gauge else None,
        "gauge_context_window": gauge.context_window if gauge else None,
        "gauge_estimated": gauge.estimated if gauge else None,
        "gauge_version": gauge.version if gauge else None,
        "gauge_model": gauge.model if gauge else None,
        "gauge_state": None if figures.state is None else dict(figures.state),
    }


FIGURE_COLUMNS = figures_columns(SessionFigures()).keys()
_sessions = table_of(SessionRow)
# Built once: building an UPDATE of 13 columns per call costs more than running it.
UPDATE_FIGURES = (
    update(_sessions)
    .where(_sessions.c.id == bindparam("row_id"))
    .values({name: bindparam(name) for name in FIGURE_COLUMNS})
)


def chat_files_json(files: tuple[ChatFile, ...]) -> list[dict[str, Any]]:
    return [{"path": f.path, "readOnly": f.read_only} for f in files]


def info_columns(info: SessionInfo) -> dict[str, Any]:
    """Every column of a new session's row but its identity and dates (create, fork)."""
    return {
        **figures_columns(info.figures),
        "extra": dict(info.extra),
        "chat_files": chat_files_json(info.chat_files) or None,
        "transcript_cursor": None
        if info.transcript_cursor is None
        else dict(info.transcript_cursor),
        "forked_from": info.forked_from,
        "handoff_from": info.handoff_from,
        "goal": info.goal,
    }


def fields_columns(fields: SessionFields) -> dict[str, Any]:
    """The columns a commit's `fields` set (those it leaves as stored are absent)."""
    columns: dict[str, Any] = {}
    if fields.figures is not None:
        columns.update(figures_columns(fields.figures))
    if fields.title is not None:
        columns["title"] = fields.title
    if fields.extra is not None:
        columns["extra"] = dict(fields.extra)
    if fields.chat_files is not None:
        columns["chat_files"] = chat_files_json(fields.chat_files)
    if fields.transcript_cursor is not None:
        columns["transcript_cursor"] = dict(fields.transcript_cursor)
    if fields.compacted_at is not None:
        columns["compacted_at"] = fields.compacted_at
    if fields.deleted_at is not None:
        columns["deleted_at"] = fields.deleted_at
    if fields.restored:
        columns["deleted_at"] = None
    return columns


def session_info(row: SessionRow) -> SessionInfo:
    """The row as a SessionInfo."""
    return SessionInfo(
        id=row.id,
        model=row.model,
        created_at=row.created_at,
        updated_at=row.updated_at,
        title=row.title,
        workspace_uri=row.workspace_uri,
        parent_id=row.parent_id,
        context_window=row.context_window,
        compacted_at=row.compacted_at,
        deleted_at=row.deleted_at,
        extra=dict(row.extra or {}),
        version=row.version or 0,
        figures=figures_of(row),
        chat_files=tuple(
            ChatFile(str(f["path"]), bool(f.get("readOnly")))
            for f in row.chat_files or ()
            if isinstance(f, Mapping) and isinstance(f.get("path"), str)
        ),
        transcript_cursor=row.transcript_cursor,
        forked_from=row.forked_from,
        handoff_from=row.handoff_from,
        goal=row.goal,
    )


def figures_of(row: SessionRow) -> SessionFigures:
    anchor = None
    if row.anchor_message_id is not None and row.anchor_delta_tokens is not None:
        anchor = AnchorDelta(row.anchor_message_id, row.anchor_delta_tokens)
    return SessionFigures(
        compactions=row.compactions or 0,
        rewinds=row.rewinds or 0,
        measured=dict(row.measured or {}),
        measured_exact=True if row.measured_exact is None else bool(row.measured_exact),
        errors=tuple(EstimateError(int(p), int(a)) for p, a in row.estimate_errors or ()),
        anchor_delta=anchor,
        gauge=gauge_of(row),
        state=row.gauge_state,
    )


def gauge_of(row: SessionRow) -> SessionGauge | None:
    """The stored gauge, or None when the row has none (a session no change has moved since
    gauges were stored: the listing loads it and shows its live figures)."""
    return stored_gauge(
        row.gauge_used_tokens,
        row.gauge_used_percentage,
        row.gauge_context_window,
        row.gauge_estimated,
        row.gauge_version,
        row.gauge_model,
    )


def stored_gauge(
    used: int | None,
    pct: float | None,
    window: int | None,
    estimated: bool | None,
    version: int | None,
    model: str | None,
) -> SessionGauge | None:
    """The gauge of the row's six gauge columns (in the order the table has them); None when
    the row has none."""
    if used is None or pct is None or window is None or estimated is None:
        return None
    return SessionGauge(used, pct, window, estimated, version or 0, model or "")


def session_row(info: SessionInfo) -> SessionRow:
    """A new session's row (a fresh id when `info` has none)."""
    return SessionRow(
        id=info.id or new_id(),
        workspace_uri=info.workspace_uri,
        title=info.title,
        model=info.model,
        parent_id=info.parent_id,
        context_window=info.context_window,
        created_at=info.created_at,
        updated_at=info.updated_at,
        compacted_at=info.compacted_at,
        deleted_at=info.deleted_at,
        version=info.version,
        **info_columns(info),
    )
