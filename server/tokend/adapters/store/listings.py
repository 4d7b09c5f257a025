"""Reads of many sessions' rows (core.ports.SessionListings), each with only the columns its
caller uses: a listing's plain columns and stored gauge, the workspace's newest id, the
transcript cursors, the sessions updated since a time. Every one is `_sessions(columns)`,
filtered and ordered the same way, read as plain rows (SQLAlchemy Core: no ORM object per row).

A listing used to read the whole row, 30 columns, and parse the JSON of four (the measured
context, the estimate errors, the chat files, the transcript cursor) for every session it
showed none of; `session/list` of 1,000 sessions was 1.15-1.26x the tree before issue 18
(bench/reshape.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, Select, select

from tokend.adapters.store.models import SessionRow, table_of
from tokend.adapters.store.rows import Transaction
from tokend.adapters.store.session_columns import stored_gauge
from tokend.core.types import ListedSession

_c = table_of(SessionRow).c
GAUGE = (
    _c.gauge_used_tokens,
    _c.gauge_used_percentage,
    _c.gauge_context_window,
    _c.gauge_estimated,
    _c.gauge_version,
    _c.gauge_model,
)
LISTED = (_c.id, _c.model, _c.created_at, _c.updated_at, _c.title, _c.workspace_uri,
          _c.deleted_at, *GAUGE)  # fmt: skip


def _sessions(
    *columns: ColumnElement[Any], workspace_uri: str | None = None, deleted: bool = False
) -> Select[Any]:
    """`columns` of the sessions not deleted (with `deleted`: of the deleted ones), of one
    workspace or all, newest first (updated, or deleted with `deleted`; then by id)."""
    query = select(*columns).where(
        _c.deleted_at.is_not(None) if deleted else _c.deleted_at.is_(None)
    )
    if workspace_uri is not None:
        query = query.where(_c.workspace_uri == workspace_uri)
    return query.order_by((_c.deleted_at if deleted else _c.updated_at).desc(), _c.id.desc())


def listed_session(row: Row[Any]) -> ListedSession:
    """A row of LISTED's columns, in its order."""
    sid, model, created, updated, title, workspace_uri, deleted_at, *gauge = cast(
        tuple[Any, ...], row
    )
    return ListedSession(
        sid, model, created, updated, title, workspace_uri, deleted_at, stored_gauge(*gauge)
    )


class SqlListings:
    """core.ports.SessionListings on a store's read transactions."""

    def __init__(self, reading: Transaction) -> None:
        self._reading = reading

    def listed(
        self, workspace_uri: str | None = None, *, deleted: bool = False
    ) -> list[ListedSession]:
        query = _sessions(*LISTED, workspace_uri=workspace_uri, deleted=deleted)
        with self._reading() as session:
            return [listed_session(row) for row in session.execute(query)]

    def newest(self, workspace_uri: str) -> str | None:
        query = _sessions(_c.id, workspace_uri=workspace_uri).limit(1)
        with self._reading() as session:
            found: str | None = session.scalar(query)
            return found

    def transcript_cursors(self) -> list[tuple[str, str | None, Mapping[str, Any]]]:
        query = _sessions(_c.id, _c.workspace_uri, _c.transcript_cursor)
        query = query.where(_c.transcript_cursor.is_not(None))
        with self._reading() as session:
            return [(sid, uri, cursor) for sid, uri, cursor in session.execute(query)]

    def updated_since(self, since: datetime) -> list[tuple[str, str | None]]:
        query = _sessions(_c.id, _c.workspace_uri).where(_c.updated_at >= since)
        with self._reading() as session:
            return [(sid, uri) for sid, uri in session.execute(query)]
