"""An append's writes in few statements (issue 22: each statement is a round trip to PostgreSQL,
whose server shares the machine): the session row's version moved by compare-and-set, its
updated_at moved forward and its figures set in ONE update (which also locks the row), the
other daemons notified from that update's RETURNING (PostgreSQL), and the message's seq taken
inside its INSERT. Main ran five statements for these (move the version, bump the row, read the
last seq, set the figures, notify); now two. The outcome is the same, errors included: no such
session or a deleted one is SessionNotFound, another daemon's version ChangedElsewhere."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, case, func, insert, select, update
from sqlalchemy.orm import Session

from tokend.adapters.store import rows
from tokend.adapters.store.feed import CHANNEL, ChangeFeed
from tokend.adapters.store.models import MessageRow, SessionRow, UtcDateTime, table_of
from tokend.adapters.store.session_columns import FIGURE_COLUMNS, fields_columns
from tokend.core.commit import SessionCommit
from tokend.core.errors import SessionNotFound
from tokend.core.types import Message

_sessions, _messages = table_of(SessionRow), table_of(MessageRow)
_stamp = bindparam("stamp", type_=UtcDateTime())
# Built once (as rows.py's): version compare-and-set, updated_at forward (never back), the
# figures; on a live session only. rowcount 0: none such, a deleted one, or another version.
MOVE_AND_SET = (
    update(_sessions)
    .where(
        _sessions.c.id == bindparam("row_id"),
        _sessions.c.version == bindparam("expected"),
        _sessions.c.deleted_at.is_(None),
    )
    .values(
        version=bindparam("new"),
        updated_at=case((_sessions.c.updated_at < _stamp, _stamp), else_=_sessions.c.updated_at),
        **{name: bindparam(name) for name in FIGURE_COLUMNS},
    )
)
# PostgreSQL: the notification sent by the same statement (one per row updated: one).
MOVE_SET_AND_NOTIFY = MOVE_AND_SET.returning(
    func.pg_notify(bindparam("channel"), bindparam("payload"))
)
# The message with the session's next seq, read in the INSERT itself (the row lock above
# keeps two appends of one session from taking the same one).
_NEXT_SEQ = (
    select(func.coalesce(func.max(_messages.c.seq), 0) + 1)
    .where(_messages.c.session_id == bindparam("seq_session_id"))
    .scalar_subquery()
)
INSERT_NEXT_MESSAGE = insert(_messages).values(seq=_NEXT_SEQ)


def append_in(
    session: Session, session_id: str, commit: SessionCommit, feed: ChangeFeed | None
) -> bool:
    """An append's row update, notification and message insert, when `commit` is one (a version
    moved, a message, the figures alone among the row's columns): True once written; False
    (nothing written) for any other commit, to be written statement by statement."""
    message, version = commit.message, commit.version
    columns = fields_columns(commit.fields)
    if message is None or version is None or columns.keys() != FIGURE_COLUMNS:
        return False
    params: dict[str, Any] = {
        "row_id": session_id,
        "expected": version[0],
        "new": version[1],
        "stamp": message.completed_at or message.created_at,
        **columns,
    }
    if feed is not None:
        payload = feed.payload(session_id, version[1])
        result = session.execute(MOVE_SET_AND_NOTIFY, {**params, "channel": CHANNEL, **payload})
        updated = len(result.all())
    else:
        updated = session.execute(MOVE_AND_SET, params).rowcount  # type: ignore[attr-defined]
    if updated != 1:
        _refuse(session, session_id, version[0])
    _insert(session, message, version[1], commit.message_tokens)
    return True


def _insert(session: Session, message: Message, version: int, tokens: int | None) -> None:
    message_id = message.id or rows.new_id()
    session.execute(
        INSERT_NEXT_MESSAGE,
        {
            "id": message_id,
            "session_id": message.session_id,
            "seq_session_id": message.session_id,
            **rows.message_columns(message),
            "version": version,
            "tokens": tokens,
        },
    )
    if message.parts:
        session.execute(rows.INSERT_PARTS, rows.part_rows(message_id, message.parts))


def _refuse(session: Session, session_id: str, expected: int) -> None:
    """Why the row was not updated, as the statements one by one said it: no such session,
    another daemon's version (ChangedElsewhere), or a deleted session."""
    row = session.execute(
        select(_sessions.c.version, _sessions.c.deleted_at).where(_sessions.c.id == session_id)
    ).first()
    if row is None:
        raise SessionNotFound(f"session {session_id} not found")
    if row.version != expected:
        raise rows.changed_elsewhere(session_id, row.version, expected)
    raise SessionNotFound(f"session {session_id} not found")
