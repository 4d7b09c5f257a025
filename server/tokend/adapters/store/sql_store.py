"""SqlStore: sessions, messages and parts (core.ports.Store) and the token-count cache
(core.ports.CountCache) in one SQL database through SQLAlchemy 2. Each role the port names has
its own object, built here on the store's one engine and its transactions: `listings`
(listings.py), `messages` (messages.py), `parts` (parts.py), `calibration` (calibration.py);
and so has the CountCache, `count_cache` (count_cache.py).

One Engine per store and one ORM Session per call, so the asyncio loop thread and a worker thread
may share a store. Writes are single transactions: all of it or nothing. Nothing is ever deleted:
sessions are soft-deleted (deleted_at), pruned parts only marked (compacted_at).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Self

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tokend.adapters.store import commits, forks, rows
from tokend.adapters.store.calibration import SqlCalibration
from tokend.adapters.store.count_cache import SqlCountCache
from tokend.adapters.store.engine import driver_reason, open_store_engine, writer
from tokend.adapters.store.feed import ChangeFeed
from tokend.adapters.store.identity import store_file
from tokend.adapters.store.integrity import check_at_start, damaged_store_message, is_damage
from tokend.adapters.store.listings import SqlListings
from tokend.adapters.store.messages import SqlMessages
from tokend.adapters.store.models import SessionRow
from tokend.adapters.store.parts import SqlParts
from tokend.adapters.store.session_columns import session_info, session_row
from tokend.adapters.store.url import resolve_database_url
from tokend.core.commit import SessionCommit
from tokend.core.errors import AlreadyStored, SessionNotFound, StoreError
from tokend.core.types import Message, SessionInfo

log = logging.getLogger(__name__)


class SqlStore:
    """Store and (as `count_cache`) CountCache on one database. Build with `SqlStore.open(url)`."""

    def __init__(self, engine: Engine) -> None:
        """Use `engine` as is; its schema must already be at head (see `open`)."""
        self._engine = engine
        self._feed = ChangeFeed(engine) if engine.dialect.name == "postgresql" else None
        self._read_session = sessionmaker(engine, expire_on_commit=False)
        self._write_session = sessionmaker(writer(engine), expire_on_commit=False)
        # SQLite: the file opened, checked at each write (deleted or replaced under the daemon?)
        sqlite_file = engine.dialect.name == "sqlite" and not engine.url.query.get("uri")
        self._file = store_file(engine.url.database) if sqlite_file else None
        self._path = engine.url.database if sqlite_file else None
        # Many sessions' rows, each read with the columns its caller uses (session/list, ...).
        self.listings = SqlListings(self._reading)
        # The messages' reads: a live context, a whole history, one message, a tool output.
        self.messages = SqlMessages(self._reading)
        # The marks kept on parts outside a session change (prune times, token counts).
        self.parts = SqlParts(self._writing)
        # The estimates' calibration (one row).
        self.calibration = SqlCalibration(self._reading, self._writing)
        # The token counts cached by content (core.ports.CountCache, not a role of Store's: the
        # composition root hands it to the counters).
        self.count_cache = SqlCountCache(self._reading, self._writing)

    @classmethod
    def open(cls, url: str | None = None) -> Self:
        """Open the database at `url` (default: `resolve_database_url()`), migrating it to the
        newest schema first when needed."""
        engine = open_store_engine(resolve_database_url(url))
        return cls(engine)

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def changes(self) -> ChangeFeed | None:
        """Other daemons' changes as they commit (PostgreSQL); None for a store no other
        process shares in real time (SQLite: one machine, one daemon per user)."""
        return self._feed

    def close(self) -> None:
        self._engine.dispose()

    def check_integrity(self) -> str | None:
        """SQLite's own check of the store, bounded in time (integrity.check_at_start): a report
        of the damage found, logged, or None (nothing found, not SQLite, or a store too big to
        check in full within the budget)."""
        return check_at_start(self._engine, self._path)

    def prepare_reads(self) -> None:
        """Make, for no session, the reads a session's first load makes (its row, its live
        context, the count cache's lookup): SQLAlchemy compiles each statement the first time
        a process runs it, and a restarted daemon's first request paid it (about 10 ms of a
        first `context/assemble`, issue 22). Call it before serving. A store these reads find
        damaged is left to the start's check and to the requests, which say so: only logged."""
        try:
            with self._reading() as session:
                rows.live(session, "")
                rows.load_from(session, "", live=True)
            self.count_cache.get_many([""])
        except StoreError as exc:
            log.warning("the store's first reads were not prepared: %s", exc.message)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """One read transaction: every query in it sees the same snapshot."""
        try:
            with self._read_session() as session, session.begin():
                yield session
        except SQLAlchemyError as exc:
            if is_damage(exc):
                raise StoreError(damaged_store_message(self._path, driver_reason(exc))) from exc
            raise StoreError(f"reading the session store failed: {driver_reason(exc)}") from exc

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        """One write transaction, committed at the end or rolled back whole on any error; not
        committed (StoreError) when the SQLite file is no longer the store at its path."""
        if self._file is not None:
            self._file.check()
        try:
            with self._write_session() as session, session.begin():
                yield session
                if self._file is not None:
                    self._file.check()  # just before the commit
        except SQLAlchemyError as exc:
            if is_damage(exc):
                raise StoreError(damaged_store_message(self._path, driver_reason(exc))) from exc
            raise StoreError(f"writing to the session store failed: {driver_reason(exc)}") from exc

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, info: SessionInfo) -> None:
        with self._writing() as session:
            if info.parent_id is not None and rows.live(session, info.parent_id) is None:
                raise SessionNotFound(f"parent session {info.parent_id} not found")
            session.add(session_row(info))

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self._reading() as session:
            row = rows.live(session, session_id)
            return None if row is None else session_info(row)

    # --- messages and parts -----------------------------------------------------------------

    def append_message(self, message: Message) -> None:
        """Insert the message and its parts in one transaction; the session's updated_at moves
        forward to the message's completed_at (else created_at). Empty ids get fresh ULIDs."""
        with self._writing() as session:
            commits.insert_message(session, message)

    def commit_change(self, session_id: str, commit: SessionCommit) -> None:
        """One session change in ONE transaction, all of it or nothing (core.commit): move the
        session's version from `version[0]` to `version[1]` (compare-and-set on the row, which
        also locks it: ChangedElsewhere when another process moved it), append `message`, mark
        parts pruned, mark messages out of the live context, keep gated tool outputs, set the
        row's columns. On PostgreSQL the commit notifies the other daemons ({sessionId,
        version})."""
        try:
            with self._writing() as session:
                commits.commit_in(session, session_id, commit, self._feed)
        except StoreError as exc:
            self._raise_if_stored(commit.message, exc)
            raise

    def commit_changes(self, session_id: str, changes: Sequence[SessionCommit]) -> None:
        """Several changes of one session, in order, in ONE transaction (a group commit of
        appends: service.session.group_commit); all of them or none."""
        try:
            with self._writing() as session:
                for commit in changes:
                    commits.commit_in(session, session_id, commit, self._feed)
        except StoreError as exc:
            for commit in changes:
                self._raise_if_stored(commit.message, exc)
            raise

    @contextmanager
    def hold(self, session_id: str) -> Iterator[commits.HeldSession]:
        """A write transaction holding the session's row lock (SQLite: the database's write
        lock) until it ends: no other process can change the session meanwhile. What is read
        elsewhere during it is the newest committed state; its one `commit_change` commits with
        it. Used to apply a change after another daemon moved the session: reload, recompute,
        commit, with no chance to lose the race again."""
        held: commits.HeldSession | None = None
        try:
            with self._writing() as session:
                rows.require_live(session, session_id, lock=True)
                held = commits.HeldSession(session, session_id, self._feed)
                yield held
        except StoreError as exc:
            self._raise_if_stored(held.message if held else None, exc)
            raise

    def _raise_if_stored(self, message: Message | None, exc: StoreError) -> None:
        """AlreadyStored when `exc` is the duplicate key of a message whose id is stored (a
        retried append with a client-chosen id, perhaps through another daemon): the primary
        key says so, at no cost to the appends that are not retries."""
        if message is None or not isinstance(exc.__cause__, IntegrityError):
            return
        stored = self.messages.find_message(message.id)
        if stored is not None:
            raise AlreadyStored(message.id, stored) from None

    def fork_session(self, child: SessionInfo, through_message_id: str | None = None) -> int:
        """Create `child` (its parent_id set) holding copies of its parent's messages up to
        and including `through_message_id` (all when None; the live summary too when that
        message is live), with new ids, their marks and the tool outputs they refer to, in
        one transaction. Returns how many messages were copied."""
        parent_id = child.parent_id
        if parent_id is None:
            raise ValueError("a fork needs child.parent_id")
        with self._writing() as session:
            if rows.live(session, parent_id) is None:
                raise SessionNotFound(f"session {parent_id} not found")
            row = session_row(child)
            session.add(row)
            session.flush()
            copied = forks.copy_messages(session, parent_id, child.id, through_message_id)
            # The child starts at the version its copied history makes (one per message, plus
            # the compactions it inherits), as a session grown by those changes would be.
            row.version = copied + child.figures.compactions
            return copied

    # --- soft-deleted sessions (session/delete, session/restore, `tokend sessions --deleted`) --

    def get_session_including_deleted(self, session_id: str) -> SessionInfo | None:
        """The session, soft-deleted or not (deleted_at tells); None only for an unknown id."""
        with self._reading() as session:
            row = session.get(SessionRow, session_id)
            return None if row is None else session_info(row)
