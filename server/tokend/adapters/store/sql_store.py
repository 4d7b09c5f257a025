"""SqlStore: sessions, messages and parts (core.ports.Store) and the token-count cache
(core.ports.CountCache) in one SQL database through SQLAlchemy 2.

One Engine per store and one ORM Session per call, so the asyncio loop thread and a worker thread
may share a store. Writes are single transactions: all of it or nothing. Nothing is ever deleted:
sessions are soft-deleted (deleted_at), pruned parts only marked (compacted_at).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Self

from sqlalchemy import Engine, bindparam, func, insert, select, true, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from ulid import ULID

from tokend.adapters.store.codec import part_from_json, part_to_json, usage_from_json, usage_to_json
from tokend.adapters.store.engine import create_store_engine, upgrade_to_head, writer
from tokend.adapters.store.models import (
    CalibrationRow,
    MessageRow,
    PartRow,
    SessionRow,
    TokenCacheRow,
)
from tokend.adapters.store.url import resolve_database_url
from tokend.core.errors import InvalidParams, SessionNotFound, StoreError
from tokend.core.types import Message, SessionInfo, StoredPart

UPDATABLE_SESSION_FIELDS = frozenset(
    {"title", "model", "workspace_uri", "parent_id", "context_window", "updated_at"}
    | {"compacted_at", "deleted_at", "extra"}
)
CALIBRATION_KEY = "default"
IN_CHUNK = 500  # ids per IN (...) list: well under every database's bound-parameter limit


def new_id() -> str:
    """A fresh ULID string (26 chars, sortable by creation time)."""
    return str(ULID())


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), IN_CHUNK):
        yield items[start : start + IN_CHUNK]


class SqlStore:
    """Store and CountCache on one database. Build with `SqlStore.open(url)`."""

    def __init__(self, engine: Engine) -> None:
        """Use `engine` as is; its schema must already be at head (see `open`)."""
        self._engine = engine
        self._read_session = sessionmaker(engine, expire_on_commit=False)
        self._write_session = sessionmaker(writer(engine), expire_on_commit=False)

    @classmethod
    def open(cls, url: str | None = None) -> Self:
        """Open the database at `url` (default: `resolve_database_url()`), migrating it to the
        newest schema first when needed."""
        engine = create_store_engine(resolve_database_url(url))
        try:
            upgrade_to_head(engine)
        except Exception:
            engine.dispose()
            raise
        return cls(engine)

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        self._engine.dispose()

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
            raise StoreError(f"reading the session store failed: {exc}") from exc

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        """One write transaction, committed at the end or rolled back whole on any error."""
        try:
            with self._write_session() as session, session.begin():
                yield session
        except SQLAlchemyError as exc:
            raise StoreError(f"writing to the session store failed: {exc}") from exc

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, info: SessionInfo) -> None:
        with self._writing() as session:
            if info.parent_id is not None and _live(session, info.parent_id) is None:
                raise SessionNotFound(f"parent session {info.parent_id} not found")
            session.add(
                SessionRow(
                    id=info.id or new_id(),
                    workspace_uri=info.workspace_uri,
                    title=info.title,
                    model=info.model,
                    parent_id=info.parent_id,
                    context_window=info.context_window,
                    extra=dict(info.extra),
                    created_at=info.created_at,
                    updated_at=info.updated_at,
                    compacted_at=info.compacted_at,
                    deleted_at=info.deleted_at,
                )
            )

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self._reading() as session:
            row = _live(session, session_id)
            return None if row is None else _session_info(row)

    def list_sessions(self, workspace_uri: str | None = None) -> list[SessionInfo]:
        query = select(SessionRow).where(SessionRow.deleted_at.is_(None))
        if workspace_uri is not None:
            query = query.where(SessionRow.workspace_uri == workspace_uri)
        query = query.order_by(SessionRow.updated_at.desc(), SessionRow.id.desc())
        with self._reading() as session:
            return [_session_info(row) for row in session.scalars(query)]

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set SessionInfo fields by name; works on soft-deleted sessions too (deleted_at=None
        restores one). Raises InvalidParams for other names, SessionNotFound for unknown ids."""
        unknown = set(fields) - UPDATABLE_SESSION_FIELDS
        if unknown:
            raise InvalidParams(
                f"cannot update session field(s) {sorted(unknown)}; "
                f"updatable: {sorted(UPDATABLE_SESSION_FIELDS)}"
            )
        with self._writing() as session:
            row = session.get(SessionRow, session_id, with_for_update=True)
            if row is None:
                raise SessionNotFound(f"session {session_id} not found")
            for name, value in fields.items():
                setattr(row, name, dict(value) if name == "extra" else value)

    # --- messages and parts -----------------------------------------------------------------

    def append_message(self, message: Message) -> None:
        """Insert the message and its parts in one transaction; the session's updated_at moves
        forward to the message's completed_at (else created_at). Empty ids get fresh ULIDs."""
        message_id = message.id or new_id()
        stamped_at = message.completed_at or message.created_at
        with self._writing() as session:
            # Locks the session row (PostgreSQL), so concurrent appends take seq numbers in turn.
            row = _live(session, message.session_id, lock=True)
            if row is None:
                raise SessionNotFound(f"session {message.session_id} not found")
            last_seq = session.scalar(
                select(func.max(MessageRow.seq)).where(MessageRow.session_id == row.id)
            )
            session.execute(
                insert(MessageRow),
                [
                    {
                        "id": message_id,
                        "session_id": row.id,
                        "seq": (last_seq or 0) + 1,
                        "role": message.role,
                        "model": message.model,
                        "usage": usage_to_json(message.usage),
                        "cost_usd": message.cost_usd,
                        "summary": message.summary,
                        "created_at": message.created_at,
                        "completed_at": message.completed_at,
                    }
                ],
            )
            if message.parts:
                session.execute(insert(PartRow), _part_rows(message_id, message.parts))
            if stamped_at > row.updated_at:
                row.updated_at = stamped_at

    def load_messages(self, session_id: str) -> list[Message]:
        """From the newest summary message (the compaction boundary) on, oldest first; all
        messages when there is none. Two queries whatever the length."""
        with self._reading() as session:
            _require_live(session, session_id)
            boundary = session.scalar(
                select(func.max(MessageRow.seq)).where(
                    MessageRow.session_id == session_id, MessageRow.summary == true()
                )
            )
            return _load_from(session, session_id, from_seq=boundary or 0)

    def load_all_messages(self, session_id: str) -> list[Message]:
        with self._reading() as session:
            _require_live(session, session_id)
            return _load_from(session, session_id, from_seq=0)

    def mark_parts_compacted(self, part_ids: Iterable[str], at: datetime) -> None:
        """Set compacted_at on parts not marked yet (the first prune time stays); the parts
        themselves are kept. Unknown ids are ignored."""
        ids = list(dict.fromkeys(part_ids))
        if not ids:
            return
        with self._writing() as session:
            for chunk in _chunks(ids):
                session.execute(
                    update(PartRow)
                    .where(PartRow.id.in_(chunk), PartRow.compacted_at.is_(None))
                    .values(compacted_at=at)
                    .execution_options(synchronize_session=False)
                )

    def set_part_tokens(self, counts: Mapping[str, int]) -> None:
        """Cache token counts on parts (part id -> tokens). Unknown ids are ignored."""
        if not counts:
            return
        table = PartRow.__table__
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
        now = datetime.now(UTC)
        with self._writing() as session:
            row = session.get(CalibrationRow, CALIBRATION_KEY, with_for_update=True)
            if row is None:
                session.add(CalibrationRow(key=CALIBRATION_KEY, state=dict(state), updated_at=now))
            else:
                row.state = dict(state)
                row.updated_at = now

    # --- CountCache -------------------------------------------------------------------------

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        """Cached token counts for the keys that have one."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        found: dict[str, int] = {}
        with self._reading() as session:
            for chunk in _chunks(wanted):
                query = select(TokenCacheRow.key, TokenCacheRow.tokens).where(
                    TokenCacheRow.key.in_(chunk)
                )
                found.update(session.execute(query).tuples())
        return found

    def put_many(self, counts: Mapping[str, int]) -> None:
        """Insert or overwrite token counts (key -> tokens) in one transaction."""
        if not counts:
            return
        with self._writing() as session:
            existing = _existing_counts(session, list(counts))
            fresh = [{"key": k, "tokens": v} for k, v in counts.items() if k not in existing]
            changed = [
                {"k": k, "n": v} for k, v in counts.items() if k in existing and existing[k] != v
            ]
            if fresh:
                session.execute(insert(TokenCacheRow), fresh)
            if changed:
                table = TokenCacheRow.__table__
                session.execute(
                    update(table)
                    .where(table.c.key == bindparam("k"))
                    .values(tokens=bindparam("n")),
                    changed,
                )


def _live(session: Session, session_id: str, *, lock: bool = False) -> SessionRow | None:
    row = session.get(SessionRow, session_id, with_for_update=lock)
    return None if row is None or row.deleted_at is not None else row


def _require_live(session: Session, session_id: str) -> None:
    if _live(session, session_id) is None:
        raise SessionNotFound(f"session {session_id} not found")


def _existing_counts(session: Session, keys: list[str]) -> dict[str, int]:
    existing: dict[str, int] = {}
    for chunk in _chunks(keys):
        query = select(TokenCacheRow.key, TokenCacheRow.tokens).where(TokenCacheRow.key.in_(chunk))
        existing.update(session.execute(query).tuples())
    return existing


def _part_rows(message_id: str, parts: Sequence[StoredPart]) -> list[dict[str, Any]]:
    return [
        {
            "id": stored.id or new_id(),
            "message_id": message_id,
            "idx": idx,
            "kind": stored.part.kind,
            "data": part_to_json(stored.part),
            "tokens": stored.tokens,
            "compacted_at": stored.compacted_at,
        }
        for idx, stored in enumerate(parts)
    ]


def _load_from(session: Session, session_id: str, *, from_seq: int) -> list[Message]:
    """Messages with seq >= from_seq, oldest first, with their parts: exactly two queries."""
    in_range = (MessageRow.session_id == session_id, MessageRow.seq >= from_seq)
    part_rows = session.execute(
        select(
            PartRow.message_id,
            PartRow.id,
            PartRow.kind,
            PartRow.data,
            PartRow.tokens,
            PartRow.compacted_at,
        )
        .join(MessageRow, PartRow.message_id == MessageRow.id)
        .where(*in_range)
        .order_by(MessageRow.seq, PartRow.idx)
    ).tuples()
    parts_of: defaultdict[str, list[StoredPart]] = defaultdict(list)
    for message_id, part_id, kind, data, tokens, compacted_at in part_rows:
        parts_of[message_id].append(
            StoredPart(part_id, part_from_json(kind, data), tokens, compacted_at)
        )
    message_rows = session.execute(
        select(
            MessageRow.id,
            MessageRow.role,
            MessageRow.created_at,
            MessageRow.model,
            MessageRow.usage,
            MessageRow.cost_usd,
            MessageRow.summary,
            MessageRow.completed_at,
        )
        .where(*in_range)
        .order_by(MessageRow.seq)
    ).tuples()
    return [
        Message(
            id=message_id,
            session_id=session_id,
            role=role,  # type: ignore[arg-type]  # written from a Role
            parts=tuple(parts_of.get(message_id, ())),
            created_at=created_at,
            model=model,
            usage=usage_from_json(usage),
            cost_usd=cost_usd,
            summary=summary,
            completed_at=completed_at,
        )
        for message_id, role, created_at, model, usage, cost_usd, summary, completed_at in message_rows
    ]


def _session_info(row: SessionRow) -> SessionInfo:
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
    )
