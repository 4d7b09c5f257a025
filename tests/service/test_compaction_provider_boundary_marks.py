"""A provider's compaction boundary marks what it retires in the store, in the boundary's own
transaction, as a tokend summary does; a session stored before that (nothing marked) is marked
when loaded. Real SQLite files, each read back by a fresh SqlStore (and plain sqlite3), and a
fresh service for the restart.

Oracles: the ids this test appended before and after the boundary, the boundary's own time,
the rows as sqlite3 reads them, and the live service's gauge before the restart."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.appending import append
from tokend.adapters.store.sql_store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import CompactionPart, Iteration, TextPart, Usage
from tokend.service.app import build_service
from tokend.service.service import TokendService
from tokend.service.session.history import session_messages


def service_on(db: Path) -> TokendService:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    return build_service(SqlStore.open(f"sqlite:///{db}"), catalog, TokendConfig())


def gauge(service: TokendService, sid: str) -> tuple[object, ...]:
    s = service.sessions.state(sid).snapshot
    return (s.used_tokens, s.estimated, s.compactions, s.totals, s.cost_total_usd, s.version)


def session_with_a_boundary(service: TokendService) -> tuple[str, list[str], list[str]]:
    """(session, ids before the boundary, the boundary and what follows it)."""
    sid = service.sessions.create_session("claude-sonnet-4-6").id
    before = [
        append(service, sid, "user", [TextPart("port the parser, keep src/parse.py's API")]),
        append(
            service,
            sid,
            "assistant",
            [TextPart("working on it " * 50)],
            usage=Usage(input_tokens=900, output_tokens=300, cache_write_tokens=2_000),
        ),
        append(service, sid, "user", [TextPart("go on")]),
    ]
    iterations = (Iteration("compaction", 180_000, 3_500), Iteration("message", 4_200, 400))
    boundary = append(
        service,
        sid,
        "assistant",
        [
            CompactionPart(
                "The user is porting the parser.", provider="anthropic", iterations=iterations
            ),  # fmt: skip
            TextPart("Grammar ported; running the suite next."),
        ],
        usage=Usage(input_tokens=4_200, output_tokens=400),
    )
    after = append(service, sid, "user", [TextPart("and the docs too")])
    return sid, [m.id for m, _ in before], [boundary[0].id, after[0].id]


def marks(db: Path, sid: str) -> dict[str, tuple[str | None, str | None]]:
    with sqlite3.connect(db) as raw:
        rows = raw.execute(
            "SELECT id, compacted_by, compacted_at FROM messages WHERE session_id = ?", (sid,)
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def test_the_boundary_marks_what_it_retires_and_a_restart_gives_the_same_gauge(tmp_path):
    db = tmp_path / "t.sqlite3"
    live = service_on(db)
    sid, retired, kept = session_with_a_boundary(live)
    boundary_time = live.sessions.state(sid).data.messages[0].created_at
    expected_gauge = gauge(live, sid)

    fresh = SqlStore.open(f"sqlite:///{db}")
    every = {m.id: m for m in fresh.messages.load_all_messages(sid)}
    for message_id in retired:
        assert every[message_id].compacted_by == kept[0]
        assert every[message_id].compacted_at == boundary_time
    assert [m.id for m in fresh.messages.load_messages(sid)] == kept  # the store's own live context
    assert all(by is not None and at is not None for by, at in
               (marks(db, sid)[i] for i in retired))  # fmt: skip

    restarted = service_on(db)
    assert gauge(restarted, sid) == expected_gauge
    listed = session_messages(restarted, sid, include_compacted=True)
    assert [(m.id, m.compacted_by) for m in listed] == [
        *((i, kept[0]) for i in retired),
        *((i, None) for i in kept),
    ]


def test_a_session_stored_before_the_marks_is_marked_when_loaded(tmp_path):
    db = tmp_path / "t.sqlite3"
    live = service_on(db)
    sid, retired, kept = session_with_a_boundary(live)
    expected_gauge = gauge(live, sid)
    with sqlite3.connect(db) as raw:  # as a daemon before this change stored it
        raw.execute(
            "UPDATE messages SET compacted_by = NULL, compacted_at = NULL WHERE session_id = ?",
            (sid,),
        )
        # Nor did it keep the gauge's state (migration 0006): the session is loaded whole.
        raw.execute("UPDATE sessions SET gauge_state = NULL WHERE id = ?", (sid,))
    assert [m.id for m in SqlStore.open(f"sqlite:///{db}").messages.load_messages(sid)] == [
        *retired,
        *kept,
    ]

    restarted = service_on(db)
    assert gauge(restarted, sid) == expected_gauge
    assert [m.id for m in restarted.sessions.state(sid).data.messages] == kept
    stored = marks(db, sid)
    assert {i: stored[i][0] for i in retired} == dict.fromkeys(retired, kept[0])
    assert all(stored[i] == (None, None) for i in kept)
    assert [m.id for m in SqlStore.open(f"sqlite:///{db}").messages.load_messages(sid)] == kept
