"""Each reader of many sessions' rows reads only the columns it uses (adapters.store.listings).

`session/list` and `tokend sessions` read the whole row, 30 columns, and parsed the JSON of four
(measured, estimate_errors, chat_files, transcript_cursor) for every session they listed without
showing any of it: `session/list` of 1,000 sessions was 1.15-1.26x the tree before issue 18
(bench/reshape.py). Counted, not timed: the columns each SELECT names (a `before_cursor_execute`
listener on the store's own engine sees every statement it sends), against the columns each
caller shows or uses; a JSON column is one whose type in the table is JSON (the schema, not the
code under test). The gauges shown are still the stored ones (the oracle: each session's own
snapshot, taken from its live owner before the listing)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, event

from tests.appending import append
from tests.conftest import session_file
from tokend.adapters.store.models import SessionRow, table_of
from tokend.commands.importer import import_events
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_app
from tokend.service.session import admin

JSON_COLUMNS = {c.name for c in table_of(SessionRow).c if isinstance(c.type, JSON)}
# What a listing shows: the session, its model, title, workspace, dates, and its stored gauge
# (SessionGauge: tokens, percent, window, estimated, the version and model it was stored at).
LISTED = {"id", "model", "title", "workspace_uri", "created_at", "updated_at", "deleted_at"}
LISTED |= {f"gauge_{k}" for k in ("used_tokens", "used_percentage", "context_window",
                                   "estimated", "version", "model")}  # fmt: skip


@contextmanager
def selected(engine: Any) -> Iterator[list[set[str]]]:
    """The columns of the sessions table each SELECT sent meanwhile names."""
    found: list[set[str]] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        match = re.match(r"\s*SELECT\s+(.*?)\s+FROM\s+sessions\b", statement, re.S | re.I)
        if match:
            found.append({c.strip().split(".")[-1] for c in match.group(1).split(",")})

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield found
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def _read(app: Any, call: Callable[[], Any]) -> tuple[Any, set[str]]:
    """What `call` returns and the columns of its first SELECT of the sessions table."""
    with selected(app.service.store.engine) as found:
        result = call()
    assert found, "no SELECT of the sessions table"
    return result, found[0]


def test_a_listing_reads_the_columns_it_shows_and_no_json(tmp_path: Path) -> None:
    app = open_app(tmp_path, f"sqlite:///{tmp_path}/list.sqlite3")
    service = app.service
    try:
        expected = {}
        for i in range(3):
            sid = service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
            append(service, sid, "user", [TextPart(f"task {i}: make the build pass " * 20)])
            append(service, sid, "assistant", [TextPart("done " * 50)], usage=Usage(1000 + i, 60))
            snapshot = service.sessions.snapshot(sid)
            expected[sid] = (snapshot.used_tokens, snapshot.version)
            service.sessions.forget(sid)  # not loaded: the listing reads the stored figures

        listed, columns = _read(app, lambda: service.sessions.session_gauges("file:///ws"))
        assert columns == LISTED and not columns & JSON_COLUMNS  # session/list
        assert {info.id: (g.used_tokens, g.version) for info, g in listed} == expected

        def cli() -> list[Any]:  # `tokend sessions`: its rows and their gauges
            return [admin.session_gauge(service, i) for i in admin.list_sessions(service, None)]

        gauges, columns = _read(app, cli)
        assert columns == LISTED and [g.used_tokens for g in gauges] == [
            expected[sid][0] for sid in sorted(expected, reverse=True)
        ]

        admin.delete_session(service, sid)
        deleted, columns = _read(app, lambda: admin.list_sessions(service, None, deleted=True))
        assert columns == LISTED and [info.id for info in deleted] == [sid]
    finally:
        app.close()


def test_the_other_readers_read_what_they_use(tmp_path: Path) -> None:
    """The active session: its id; the usage monitor's seed: the recent sessions' ids and
    workspaces; the transcript importer (a second import of a transcript): the ids,
    workspaces and cursors of the sessions transcripts feed."""
    app = open_app(tmp_path, f"sqlite:///{tmp_path}/list.sqlite3")
    service = app.service
    try:
        first = service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
        newest = service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
        append(service, newest, "user", [TextPart("hello")])
        active, columns = _read(app, lambda: service.sessions.active_session_id("file:///ws"))
        assert (active, columns) == (newest, {"id"}) and first != newest

        _, columns = _read(app, app.usage.load_past)  # the monitor's seed reads them first
        assert columns == {"id", "workspace_uri"}
        since = service.clock.now() - timedelta(days=1)
        assert sorted(service.store.listings.updated_since(since)) == sorted(
            [(first, "file:///ws"), (newest, "file:///ws")]
        )

        transcript = tmp_path / "session.jsonl"
        transcript.write_text(session_file("short.jsonl").read_text())
        made = import_events(service, transcript, workspace_uri="file:///t").session_id
        again, columns = _read(app, lambda: import_events(service, transcript))
        assert again.session_id == made  # found by its cursor
        assert columns == {"id", "workspace_uri", "transcript_cursor"}
    finally:
        app.close()
