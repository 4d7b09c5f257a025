"""Found (issue 22): pipelined appends were committed one transaction each, one after another
(on PostgreSQL a string of round trips each, to a server on the same cores). Appends queued
while a write runs are now committed together in ONE transaction (service/session/
group_commit.py), each still answered after its commit, in the order sent, each checked as if
alone; one cancelled while it waits in the queue is not written.

Oracles: the write transactions the store is asked for (its commit_change and commit_changes
calls), the rows read back with plain SQL in seq order, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from tokend.adapters.store.url import sqlite_url
from tokend.core.errors import InvalidParams
from tokend.core.types import TextPart, ToolResultPart
from tokend.service.app import open_service
from tokend.service.service import TokendService

QUEUED = 15


@pytest.fixture(params=["sqlite", "postgresql"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TokendService]:
    url = sqlite_url(tmp_path / "group.sqlite3")
    if request.param == "postgresql":
        url = str(request.getfixturevalue("pg_url"))
    opened = open_service(None, url)
    yield opened
    opened.close()


class _Gate:
    """Holds the session's first write (of one append, or of those queued when it began) until
    the others wait behind it; counts the write transactions."""

    def __init__(self, service: TokendService, monkeypatch: pytest.MonkeyPatch) -> None:
        self.open, self.first, self.writes = threading.Event(), 0, 0
        for name, size in (("commit_change", lambda _c: 1), ("commit_changes", len)):
            real = getattr(service.store, name, None)  # main had no commit_changes
            if real is not None:
                monkeypatch.setattr(service.store, name, self._held(real, size))

    def _held(self, real, size):  # type: ignore[no-untyped-def]
        def write(session_id, commits):  # type: ignore[no-untyped-def]
            self.first = self.first or size(commits)
            self.writes += 1
            assert self.open.wait(30)
            return real(session_id, commits)

        return write


def _stored(service: TokendService, sid: str) -> list[tuple[str, int]]:
    with service.store.engine.connect() as raw:
        rows = raw.execute(
            text(
                "SELECT p.data, m.version FROM messages m JOIN parts p ON p.message_id = m.id "
                "WHERE m.session_id = :sid ORDER BY m.seq"
            ),
            {"sid": sid},
        ).all()
    return [(str(body), int(version)) for body, version in rows]


async def _queued_behind_the_first(service, sid, gate, parts):  # type: ignore[no-untyped-def]
    state = service.sessions.state(sid)
    tasks = [asyncio.ensure_future(service.appends.append(sid, "user", parts[0]))]
    while not gate.first:  # its write begun, held by the gate
        await asyncio.sleep(0.005)
    tasks += [asyncio.ensure_future(service.appends.append(sid, "user", p)) for p in parts[1:]]
    while len(state.appends) < len(parts) - 1:  # the others queued behind it
        await asyncio.sleep(0.005)
    return tasks


def test_appends_queued_behind_a_write_commit_together_in_order(
    service: TokendService, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
    gate = _Gate(service, monkeypatch)

    async def run() -> list:  # type: ignore[type-arg]
        parts = [[TextPart(f"#{i:02d}")] for i in range(QUEUED + 1)]
        tasks = await _queued_behind_the_first(service, sid, gate, parts)
        gate.open.set()
        return await asyncio.gather(*tasks)

    results = asyncio.run(run())
    assert [r.version for r in results] == list(range(1, QUEUED + 2))
    # The first alone, then the others: two write transactions; main: 16, one per append.
    assert gate.writes == 2
    stored = _stored(service, sid)
    assert [version for _, version in stored] == list(range(1, QUEUED + 2))
    assert [f"#{i:02d}" in body for i, (body, _) in enumerate(stored)] == [True] * (QUEUED + 1)
    assert service.sessions.snapshot(sid).version == QUEUED + 1


def test_a_queued_append_cancelled_or_refused_is_not_written_and_the_others_are(
    service: TokendService, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
    gate = _Gate(service, monkeypatch)

    async def run() -> list:  # type: ignore[type-arg]
        parts = [[TextPart(f"#{i}")] for i in range(5)]
        parts[3] = [ToolResultPart("nobody", "Bash", "#3 answers no call")]
        tasks = await _queued_behind_the_first(service, sid, gate, parts)
        tasks[2].cancel()  # waiting in the queue: it wins
        await asyncio.sleep(0)
        gate.open.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = asyncio.run(run())
    assert isinstance(results[2], asyncio.CancelledError)
    assert isinstance(results[3], InvalidParams)
    assert [results[i].version for i in (0, 1, 4)] == [1, 2, 3]
    stored = _stored(service, sid)
    assert [v for _, v in stored] == [1, 2, 3]
    assert [next(t for t in ("#0", "#1", "#4") if t in body) for body, _ in stored] == [
        "#0",
        "#1",
        "#4",
    ]
    assert gate.writes == 2
