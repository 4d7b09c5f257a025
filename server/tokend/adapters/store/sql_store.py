"""SqlStore: sessions, messages and parts (core.ports.Store) and the token-count cache
(core.ports.CountCache) in one SQL database through SQLAlchemy 2.

One Engine per store and one ORM Session per call, so the asyncio loop thread and a worker thread
may share a store. Writes are single transactions: all of it or nothing. Nothing is ever deleted:
sessions are soft-deleted (deleted_at), pruned parts only marked (compacted_at).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Self, cast

from sqlalchemy import CursorResult, Engine, bindparam, make_url, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tokend.adapters.store import forks, rows
from tokend.adapters.store.codec import usage_to_json
from tokend.adapters.store.engine import create_store_engine, upgrade_to_head, writer
from tokend.adapters.store.feed import ChangeFeed
from tokend.adapters.store.grown_rows import rewrite_message
from tokend.adapters.store.identity import store_file
from tokend.adapters.store.integrity import check_at_start, damaged_store_message, is_damage
from tokend.adapters.store.listings import SqlListings
from tokend.adapters.store.message_read import collector_paused
from tokend.adapters.store.models import (
    CalibrationRow,
    MessageRow,
    PartRow,
    SessionRow,
    TokenCacheRow,
    table_of,
)
from tokend.adapters.store.session_columns import info_columns, session_info, set_fields
from tokend.adapters.store.url import resolve_database_url
from tokend.core.commit import SessionCommit
from tokend.core.errors import AlreadyStored, SessionNotFound, StoreError
from tokend.core.types import Message, SessionInfo, StoredMessage

CALIBRATION_KEY = "default"


def _shown(url: str) -> str:
    """The URL for a message, password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except SQLAlchemyError:
        return "(unparsable URL)"


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's own words (e.g. "UNIQUE constraint failed: parts.id"), without the SQL
    statement and its parameters, which may hold whole tool outputs."""
    return str(getattr(exc, "orig", None) or exc)


def _session_row(info: SessionInfo) -> SessionRow:
    return SessionRow(
        id=info.id or rows.new_id(),
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


class HeldSession:
    """A session whose row lock a transaction holds (SqlStore.hold); commit one change in it."""

    def __init__(self, store: SqlStore, session: Session, session_id: str) -> None:
        self._store, self._session, self._session_id = store, session, session_id
        self.message: Message | None = None  # the message its change appends, if any

    def commit_change(self, commit: SessionCommit) -> None:
        """As SqlStore.commit_change, in the holding transaction."""
        self.message = commit.message
        self._store._commit_in(self._session, self._session_id, commit)


class SqlStore:
    """Store and CountCache on one database. Build with `SqlStore.open(url)`."""

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

    @classmethod
    def open(cls, url: str | None = None) -> Self:
        """Open the database at `url` (default: `resolve_database_url()`), migrating it to the
        newest schema first when needed."""
        resolved = resolve_database_url(url)
        try:
            engine = create_store_engine(resolved)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot use database URL {_shown(resolved)}: {exc}") from exc
        try:
            upgrade_to_head(engine)
        except SQLAlchemyError as exc:
            engine.dispose()
            raise StoreError(
                f"cannot open the database {_shown(resolved)}: {_reason(exc)}"
            ) from exc
        except BaseException:
            engine.dispose()
            raise
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
                raise StoreError(damaged_store_message(self._path, _reason(exc))) from exc
            raise StoreError(f"reading the session store failed: {_reason(exc)}") from exc

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
                raise StoreError(damaged_store_message(self._path, _reason(exc))) from exc
            raise StoreError(f"writing to the session store failed: {_reason(exc)}") from exc

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, info: SessionInfo) -> None:
        with self._writing() as session:
            if info.parent_id is not None and rows.live(session, info.parent_id) is None:
                raise SessionNotFound(f"parent session {info.parent_id} not found")
            session.add(_session_row(info))

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self._reading() as session:
            row = rows.live(session, session_id)
            return None if row is None else session_info(row)

    # --- messages and parts -----------------------------------------------------------------

    def append_message(self, message: Message) -> None:
        """Insert the message and its parts in one transaction; the session's updated_at moves
        forward to the message's completed_at (else created_at). Empty ids get fresh ULIDs."""
        with self._writing() as session:
            self._insert_message(session, message)

    def _insert_message(
        self,
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
                "role": message.role,
                "model": message.model,
                "usage": usage_to_json(message.usage),
                "cost_usd": message.cost_usd,
                "summary": message.summary,
                "created_at": message.created_at,
                "completed_at": message.completed_at,
                "version": version,
                "tokens": tokens,
            },
        )
        if message.parts:
            session.execute(rows.INSERT_PARTS, rows.part_rows(message_id, message.parts))

    def commit_change(self, session_id: str, commit: SessionCommit) -> None:
        """One session change in ONE transaction, all of it or nothing (core.commit): move the
        session's version from `version[0]` to `version[1]` (compare-and-set on the row, which
        also locks it: ChangedElsewhere when another process moved it), append `message`, mark
        parts pruned, mark messages out of the live context, keep gated tool outputs, set the
        row's columns. On PostgreSQL the commit notifies the other daemons ({sessionId,
        version})."""
        try:
            with self._writing() as session:
                self._commit_in(session, session_id, commit)
        except StoreError as exc:
            self._raise_if_stored(commit.message, exc)
            raise

    @contextmanager
    def hold(self, session_id: str) -> Iterator[HeldSession]:
        """A write transaction holding the session's row lock (SQLite: the database's write
        lock) until it ends: no other process can change the session meanwhile. What is read
        elsewhere during it is the newest committed state; its one `commit_change` commits with
        it. Used to apply a change after another daemon moved the session: reload, recompute,
        commit, with no chance to lose the race again."""
        held: HeldSession | None = None
        try:
            with self._writing() as session:
                rows.require_live(session, session_id, lock=True)
                held = HeldSession(self, session, session_id)
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
        stored = self.find_message(message.id)
        if stored is not None:
            raise AlreadyStored(message.id, stored) from None

    def _commit_in(self, session: Session, session_id: str, commit: SessionCommit) -> None:
        part_ids = list(dict.fromkeys(commit.pruned_part_ids))
        if part_ids and commit.pruned_at is None:
            raise ValueError("pruned_at is needed to mark parts")
        version = commit.version
        if version is not None:
            rows.move_version(session, session_id, *version)
        if commit.message is not None:
            new = None if version is None else version[1]
            self._insert_message(session, commit.message, new, commit.message_tokens)
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
        set_fields(session, session_id, commit.fields)
        if version is not None and self._feed is not None:
            session.execute(self._feed.notify_statement(session_id, version[1]))

    def find_message(self, message_id: str) -> StoredMessage | None:
        with self._reading() as session:
            return rows.stored_message(session, message_id)

    def load_messages(self, session_id: str, *, including_deleted: bool = False) -> list[Message]:
        """The live context, oldest first: the live summary (if any) first, then every message
        no summary covers and no rewind took out. Two queries whatever the length (the session,
        its messages), the collector paused meanwhile."""
        with collector_paused(), self._reading() as session:
            rows.require_live(session, session_id, deleted_too=including_deleted)
            return rows.load_from(session, session_id, live=True)

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

    def load_all_messages(
        self, session_id: str, *, including_deleted: bool = False
    ) -> list[Message]:
        with collector_paused(), self._reading() as session:
            rows.require_live(session, session_id, deleted_too=including_deleted)
            return rows.load_from(session, session_id)

    def read_tool_output(
        self, session_id: str, ref: str, offset: int, length: int
    ) -> tuple[str, int] | None:
        """(`length` characters of the stored tool output `ref` from `offset`, its length in
        characters), or None when the session has no such output."""
        with self._reading() as session:
            rows.require_live(session, session_id)
            return rows.tool_output_slice(session, session_id, ref, offset, length)

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
            row = _session_row(child)
            session.add(row)
            session.flush()
            copied = forks.copy_messages(session, parent_id, child.id, through_message_id)
            # The child starts at the version its copied history makes (one per message, plus
            # the compactions it inherits), as a session grown by those changes would be.
            row.version = copied + child.figures.compactions
            return copied

    def mark_parts_compacted(self, part_ids: Iterable[str], at: datetime) -> None:
        """Set compacted_at on parts not marked yet (the first prune time stays); the parts
        themselves are kept. Unknown ids are ignored."""
        ids = list(dict.fromkeys(part_ids))
        if not ids:
            return
        with self._writing() as session:
            rows.mark_parts(session, ids, at)

    def set_part_tokens(self, counts: Mapping[str, int]) -> None:
        """Cache token counts on parts (part id -> tokens). Unknown ids are ignored."""
        if not counts:
            return
        table = table_of(PartRow)
        statement = (
            update(table).where(table.c.id == bindparam("part_id")).values(tokens=bindparam("n"))
        )
        with self._writing() as session:
            session.execute(statement, [{"part_id": k, "n": v} for k, v in counts.items()])

    # --- calibration ------------------------------------------------------------------------

    def load_calibration(self) -> dict[str, Any]:
        with self._reading() as session:
            row = session.get(CalibrationRow, CALIBRATION_KEY)
            return {} if row is None else dict(row.state)

    def save_calibration(self, state: Mapping[str, Any]) -> None:
        """Insert or overwrite the calibration (one upsert: daemons sharing a database may
        save at the same moment)."""
        values = {"key": CALIBRATION_KEY, "state": dict(state), "updated_at": datetime.now(UTC)}
        with self._writing() as session:
            session.execute(rows.upsert(session, CalibrationRow, [values], ("state", "updated_at")))

    # --- CountCache -------------------------------------------------------------------------

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        """Cached token counts for the keys that have one."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._reading() as session:
            return rows.existing_counts(session, wanted)

    def put_many(self, counts: Mapping[str, int]) -> None:
        """Insert or overwrite token counts (key -> tokens) in one transaction (an upsert:
        daemons sharing a database may count the same content at once)."""
        if not counts:
            return
        values = [{"key": k, "tokens": v} for k, v in counts.items()]
        with self._writing() as session:
            session.execute(rows.upsert(session, TokenCacheRow, values, ("tokens",)))

    # --- soft-deleted sessions (session/delete, session/restore, `tokend sessions --deleted`) --

    def get_session_including_deleted(self, session_id: str) -> SessionInfo | None:
        """The session, soft-deleted or not (deleted_at tells); None only for an unknown id."""
        with self._reading() as session:
            row = session.get(SessionRow, session_id)
            return None if row is None else session_info(row)
