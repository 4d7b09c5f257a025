"""Found (issue 22): an append (a message with the session's figures, as SessionState commits
every append) ran seven statements on PostgreSQL besides BEGIN and COMMIT, each a round trip
to a server on the same cores: move the version, bump the row, read the last seq, insert the
message, insert its parts, set the figures, notify (six on SQLite, no notify). Now three (adapters/store/append_rows.py),
on SQLite too, with the same rows written and the same refusals.

Oracles: the statements the driver is given (SQLAlchemy's before_cursor_execute), the rows read
back with plain SQL, the notification another store hears (PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, text

from tests.store.conftest import at, message, session_info
from tokend.adapters.store import SqlStore
from tokend.core.commit import SessionCommit, SessionFields
from tokend.core.errors import ChangedElsewhere, SessionNotFound
from tokend.core.types import SessionFigures, SessionGauge

FIGURES = SessionFigures(
    compactions=2,
    measured={"system": 40},
    gauge=SessionGauge(1_234, 12.5, 10_000, False, 3, "gpt-4o"),
    state={"k": [1, 2]},
)


def _append(version: int) -> SessionCommit:
    m = message("s", created_at=at(100 + version))
    return SessionCommit((version - 1, version), m, 7 + version, fields=SessionFields(FIGURES))


def test_an_append_runs_three_statements_and_writes_what_it_did(db_url: str) -> None:
    with SqlStore.open(db_url) as store:
        store.create_session(session_info("s"))
        store.commit_change("s", _append(1))
        seen: list[str] = []
        event.listen(
            store.engine, "before_cursor_execute", lambda *a: seen.append(a[2].split()[0:3])
        )
        commits = [_append(v) for v in (2, 3, 4)]
        for commit in commits:
            seen.clear()
            store.commit_change("s", commit)
            kinds = [" ".join(s[:3]) for s in seen if s[0] != "BEGIN"]  # SQLite's own BEGIN
            # main: UPDATE x3, SELECT max(seq), INSERT x2 (and SELECT pg_notify): 6 or 7
            assert kinds == ["UPDATE sessions SET", "INSERT INTO messages", "INSERT INTO parts"]
        with store.engine.connect() as raw:
            got = raw.execute(
                text("SELECT id, seq, version, tokens FROM messages WHERE session_id = 's'")
            ).all()
            row = raw.execute(
                text(
                    "SELECT version, compactions, gauge_used_tokens, gauge_model, updated_at "
                    "FROM sessions WHERE id = 's'"
                )
            ).one()
    assert sorted((seq, version, tokens) for _, seq, version, tokens in got) == [
        (v, v, 7 + v) for v in (1, 2, 3, 4)
    ]
    assert {i for i, *_ in got} >= {c.message.id for c in commits if c.message}
    assert tuple(row[:4]) == (4, 2, 1_234, "gpt-4o")
    stamp = row[4] if isinstance(row[4], datetime) else datetime.fromisoformat(row[4])
    assert stamp.replace(tzinfo=UTC) == at(104).replace(tzinfo=UTC)


def test_an_append_is_refused_as_before_and_writes_nothing(db_url: str) -> None:
    with SqlStore.open(db_url) as store, SqlStore.open(db_url) as other:
        store.create_session(session_info("s"))
        store.commit_change("s", _append(1))
        with pytest.raises(ChangedElsewhere) as refused:
            other.commit_change("s", _append(1))  # another daemon's stale version
        assert refused.value.data == {"currentVersion": 1}
        with pytest.raises(SessionNotFound):
            store.commit_change("nobody", _append(1))
        store.commit_change("s", SessionCommit(fields=SessionFields(deleted_at=at(500))))
        with pytest.raises(SessionNotFound):
            store.commit_change("s", _append(2))
        with store.engine.connect() as raw:
            count = raw.execute(text("SELECT count(*) FROM messages")).scalar()
            version = raw.execute(text("SELECT version FROM sessions WHERE id = 's'")).scalar()
    assert (count, version) == (1, 1)


def test_another_daemon_hears_each_append(pg_url: str) -> None:
    with SqlStore.open(pg_url) as store, SqlStore.open(pg_url) as other:
        store.create_session(session_info("s"))
        heard: list[tuple[str | None, int]] = []
        three = threading.Event()

        def on_change(session_id: str | None, version: int) -> None:
            heard.append((session_id, version))
            if len([h for h in heard if h[0] == "s"]) == 3:
                three.set()

        assert other.changes is not None
        stop = other.changes.listen(on_change)
        try:
            for version in (1, 2, 3):
                store.commit_change("s", _append(version))
            assert three.wait(30)
        finally:
            stop()
    assert [h for h in heard if h[0] == "s"] == [("s", 1), ("s", 2), ("s", 3)]


def test_a_change_right_after_listen_is_heard_however_slow_the_connection(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`listen` returns once its connection listens: an append committed right after it is
    heard even when the connection takes its time (here 0.5 s; CI's loaded machine took longer
    than the test's three appends). Main 95d659b returned at once, and the three appends made
    before the LISTEN went unheard."""
    from tokend.adapters.store.feed import ChangeFeed

    connect = ChangeFeed._connect

    def slow_connect(self: ChangeFeed) -> object:
        threading.Event().wait(0.5)
        return connect(self)

    monkeypatch.setattr(ChangeFeed, "_connect", slow_connect)
    with SqlStore.open(pg_url) as store, SqlStore.open(pg_url) as other:
        store.create_session(session_info("s"))
        heard: list[tuple[str | None, int]] = []
        first = threading.Event()

        def on_change(session_id: str | None, version: int) -> None:
            heard.append((session_id, version))
            first.set()

        assert other.changes is not None
        stop = other.changes.listen(on_change)
        try:
            store.commit_change("s", _append(1))
            assert first.wait(30)
        finally:
            stop()
    assert heard == [("s", 1)]
