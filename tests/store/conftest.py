"""Fixtures for the store tests: real SQLite files in tmp_path, real PostgreSQL databases."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tokend.adapters.store import SqlStore, new_id
from tokend.adapters.store.url import sqlite_url
from tokend.core.types import Message, Part, Role, SessionInfo, StoredPart, TextPart

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
_ticks = itertools.count(1)


def at(seconds: float) -> datetime:
    """A fixed instant `seconds` after T0 (aware, UTC)."""
    return T0 + timedelta(seconds=seconds)


def session_info(session_id: str | None = None, **fields: object) -> SessionInfo:
    values: dict[str, object] = {"model": "gpt-4o", "created_at": T0, "updated_at": T0}
    values.update(fields)
    return SessionInfo(id=session_id or new_id(), **values)  # type: ignore[arg-type]


def message(
    session_id: str,
    *parts: Part,
    role: Role = "user",
    summary: bool = False,
    created_at: datetime | None = None,
) -> Message:
    """A message with fresh ids; each part a StoredPart with its own id."""
    stored = tuple(StoredPart(new_id(), p) for p in (parts or (TextPart(f"hi {next(_ticks)}"),)))
    return Message(
        id=new_id(),
        session_id=session_id,
        role=role,
        parts=stored,
        created_at=created_at or at(next(_ticks)),
        summary=summary,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every store test runs on a real SQLite file and on a real PostgreSQL database (a fresh
    one per test, on the server the suite started)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return sqlite_url(tmp_path / "tokend.sqlite3")


@pytest.fixture
def store(db_url: str) -> Iterator[SqlStore]:
    with SqlStore.open(db_url) as opened:
        yield opened
