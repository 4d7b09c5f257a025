"""session/list reads the sessions' rows without their gauge state (core.session.gauge_state):
only loading needs it, and the listing parsed its JSON (about 900 bytes a session) for every row,
which made session/list of 300 sessions 2-4x slower than main before the figures had columns
(bench/reshape.py). Counted, not timed: the SELECT a listing sends names no gauge_state column,
and the gauges it shows are still the stored ones (the oracle: each session's own snapshot,
taken from its live owner before the listing)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event

from tests.appending import append
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_service


def test_a_listing_reads_no_gauge_state_and_shows_the_stored_gauges(tmp_path: Path) -> None:
    service = open_service(None, f"sqlite:///{tmp_path}/list.sqlite3")
    try:
        expected = {}
        for i in range(3):
            sid = service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
            append(service, sid, "user", [TextPart(f"task {i}: make the build pass " * 20)])
            append(service, sid, "assistant", [TextPart("done " * 50)], usage=Usage(1000 + i, 60))
            snapshot = service.sessions.snapshot(sid)
            expected[sid] = (snapshot.used_tokens, snapshot.version)
            service.sessions.forget(sid)  # not loaded: the listing reads the stored figures
        stored = service.store.get_session(sid)
        assert stored is not None and stored.figures.state is not None  # the row keeps one

        statements: list[str] = []

        def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
            statements.append(statement)

        engine = service.store._engine  # the store's own engine: every statement it sends
        event.listen(engine, "before_cursor_execute", seen)
        try:
            listed = service.sessions.session_gauges("file:///ws")
        finally:
            event.remove(engine, "before_cursor_execute", seen)

        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert selects and not any("gauge_state" in s for s in selects), selects
        shown = {info.id: (gauge.used_tokens, gauge.version) for info, gauge in listed}
        assert shown == expected
        assert all(info.figures.state is None for info, _ in listed)
        deleted = service.store.list_deleted_sessions("file:///ws")
        assert deleted == []
    finally:
        service.close()
