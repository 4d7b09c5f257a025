"""Reads of a store's messages (core.ports.SessionMessages): a session's live context, its whole
history, its replies' usage alone, what was appended after a version, one message by id and a
slice of a gated tool output, each in one read transaction of the store's."""

from __future__ import annotations

from tokend.adapters.store import rows
from tokend.adapters.store.message_read import collector_paused, read_replies
from tokend.adapters.store.rows import Transaction
from tokend.adapters.store.session_columns import session_info
from tokend.core.errors import SessionNotFound
from tokend.core.types import Message, SessionInfo, StoredMessage


class SqlMessages:
    """core.ports.SessionMessages on a store's read transactions."""

    def __init__(self, reading: Transaction) -> None:
        self._reading = reading

    def load_messages(self, session_id: str, *, including_deleted: bool = False) -> list[Message]:
        """The live context, oldest first: the live summary (if any) first, then every message
        no summary covers and no rewind took out. Two queries whatever the length (the session,
        its messages), the collector paused meanwhile."""
        with collector_paused(), self._reading() as session:
            rows.require_live(session, session_id, deleted_too=including_deleted)
            return rows.load_from(session, session_id, live=True)

    def load_all_messages(
        self, session_id: str, *, including_deleted: bool = False
    ) -> list[Message]:
        with collector_paused(), self._reading() as session:
            rows.require_live(session, session_id, deleted_too=including_deleted)
            return rows.load_from(session, session_id)

    def load_replies(self, session_id: str) -> list[Message]:
        """Every message with a provider's usage, oldest first, without its parts: one query
        of the messages table alone (the usage monitor's seed at a daemon's start read every
        message with its parts: at 50,000 messages 75 MB of tool output, to keep 25,000
        calls' figures)."""
        with collector_paused(), self._reading() as session:
            return read_replies(session, session_id)

    def load_since(self, session_id: str, version: int) -> tuple[SessionInfo, list[Message]]:
        """The session as stored now and the messages appended after `version` (whether still
        live or not), oldest first, read in one snapshot: what a daemon that knows the session
        at `version` needs to catch up when other daemons only appended."""
        with self._reading() as session:
            row = rows.live(session, session_id)
            if row is None:
                raise SessionNotFound(f"session {session_id} not found")
            info = session_info(row)
            return info, rows.load_from(session, session_id, after_version=version)

    def find_message(self, message_id: str) -> StoredMessage | None:
        with self._reading() as session:
            return rows.stored_message(session, message_id)

    def read_tool_output(
        self, session_id: str, ref: str, offset: int, length: int
    ) -> tuple[str, int] | None:
        """(`length` characters of the stored tool output `ref` from `offset`, its length in
        characters), or None when the session has no such output."""
        with self._reading() as session:
            rows.require_live(session, session_id)
            return rows.tool_output_slice(session, session_id, ref, offset, length)
