"""One session change written in a write transaction (SqlStore.append_message, commit_change,
hold): the message appended with its parts, the version moved, parts and messages marked, gated
tool outputs kept, the row's columns set, other daemons notified (PostgreSQL)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from tokend.adapters.store import rows
from tokend.adapters.store.append_rows import append_in
from tokend.adapters.store.feed import ChangeFeed
from tokend.adapters.store.grown_rows import rewrite_message
from tokend.adapters.store.models import MessageRow
from tokend.adapters.store.session_columns import set_fields
from tokend.core.commit import SessionCommit
from tokend.core.errors import SessionNotFound
from tokend.core.types import Message


class HeldSession:
    """A session whose row lock a transaction holds (SqlStore.hold); commit one change in it."""

    def __init__(self, session: Session, session_id: str, feed: ChangeFeed | None) -> None:
        self._session, self._session_id, self._feed = session, session_id, feed
        self.message: Message | None = None  # the message its change appends, if any

    def commit_change(self, commit: SessionCommit) -> None:
        """As SqlStore.commit_change, in the holding transaction."""
        self.message = commit.message
        commit_in(self._session, self._session_id, commit, self._feed)


def insert_message(
    session: Session,
    message: Message,
    version: int | None = None,
    tokens: int | None = None,
) -> None:
    message_id = message.id or rows.new_id()
    stamped_at = message.completed_at or message.created_at
    # Also locks the session row (PostgreSQL): concurrent appends take seq numbers in turn.
    # An UPDATE's result is a CursorResult (it has rowcount); Session.execute's stubs
    # only promise a Result.
    bumped = cast(
        CursorResult[Any],
        session.execute(
            rows.BUMP_LIVE_SESSION, {"session_id": message.session_id, "stamp": stamped_at}
        ),
    )
    if bumped.rowcount != 1:
        raise SessionNotFound(f"session {message.session_id} not found")
    last_seq = session.scalar(rows.LAST_SEQ, {"sid": message.session_id})
    session.execute(
        rows.INSERT_MESSAGE,
        {
            "id": message_id,
            "session_id": message.session_id,
            "seq": (last_seq or 0) + 1,
            **rows.message_columns(message),
            "version": version,
            "tokens": tokens,
        },
    )
    if message.parts:
        session.execute(rows.INSERT_PARTS, rows.part_rows(message_id, message.parts))


def commit_in(
    session: Session, session_id: str, commit: SessionCommit, feed: ChangeFeed | None
) -> None:
    """SqlStore.commit_change's writes, in the caller's transaction `session`."""
    part_ids = list(dict.fromkeys(commit.pruned_part_ids))
    if part_ids and commit.pruned_at is None:
        raise ValueError("pruned_at is needed to mark parts")
    version = commit.version
    appended = append_in(session, session_id, commit, feed)  # an append: its row, its message
    if version is not None and not appended:
        rows.move_version(session, session_id, *version)
    if commit.message is not None and not appended:
        new = None if version is None else version[1]
        insert_message(session, commit.message, new, commit.message_tokens)
    rewrite_message(session, session_id, commit)  # grown, recounted
    if part_ids:
        assert commit.pruned_at is not None
        rows.mark_parts(session, part_ids, commit.pruned_at)
    for compacted in commit.compacted:
        for chunk in rows.chunks(list(dict.fromkeys(compacted.message_ids))):
            session.execute(
                update(MessageRow)
                .where(
                    MessageRow.id.in_(chunk),
                    MessageRow.session_id == session_id,
                    MessageRow.compacted_at.is_(None),
                )
                .values(compacted_at=compacted.at, compacted_by=compacted.by)
                .execution_options(synchronize_session=False)
            )
    if commit.tool_outputs:
        rows.insert_tool_outputs(session, session_id, commit.tool_outputs)
    if appended:
        return  # the row's figures and the notification went with the append's update
    set_fields(session, session_id, commit.fields)
    if version is not None and feed is not None:
        session.execute(feed.notify_statement(session_id, version[1]))
