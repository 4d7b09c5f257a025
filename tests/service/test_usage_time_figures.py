"""Claude Code's status-line time and lines in the snapshot, on a real SQLite file: kept as
messages are appended, and the same after a reload, across a compaction boundary. Oracles: the
clock the test moves, and the lines of the edits it sends, counted by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.appending import append
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import Message, StoredPart, TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import build_service
from tokend.service.service import TokendService
from tokend.service.session.sessions import new_id

T0 = datetime(2026, 1, 5, 10, 0, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1_000, output_tokens=50, cache_read_tokens=10_000)


class StepClock:
    def __init__(self) -> None:
        self.at = T0

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def open_service(path, clock: StepClock) -> TokendService:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    return build_service(SqlStore.open(f"sqlite:///{path}"), catalog, TokendConfig(), clock=clock)


def edit_turn(service: TokendService, sid: str, call_id: str, tool: str, args: dict, ok: bool):
    append(service, sid, "assistant", [ToolCallPart(call_id, tool, args)], usage=USAGE, model=None)
    append(
        service, sid, "tool", [ToolResultPart(call_id, tool, "done" if ok else "no match", not ok)]
    )


def test_time_and_lines_as_appended_and_after_a_reload_across_a_boundary(tmp_path):
    clock = StepClock()
    db = tmp_path / "times.sqlite3"
    service = open_service(db, clock)
    sid = service.sessions.create_session("claude-sonnet-4-5").id
    append(service, sid, "user", [TextPart("fix the parser")])
    clock.advance(2.5)
    # old a/b/c -> new a/B/c/d: b became B (1 removed, 1 added), d added: +2 -1
    edit_turn(
        service,
        sid,
        "t1",
        "Edit",
        {"file_path": "p.py", "old_string": "a\nb\nc", "new_string": "a\nB\nc\nd"},
        ok=True,
    )
    clock.advance(3)
    # three lines written, but the tool failed: not counted
    edit_turn(service, sid, "t2", "Write", {"file_path": "q.py", "content": "x\ny\nz\n"}, ok=False)
    snapshot = service.sessions.snapshot(sid)
    assert (snapshot.times.lines_added, snapshot.times.lines_removed) == (2, 1)
    assert snapshot.times.wall_duration_ms == 5_500
    assert snapshot.times.api_duration_ms is None  # no reply said when its request started

    clock.advance(10)
    service.changes.append_boundary(sid, "The parser was fixed in p.py.")
    clock.advance(1.25)
    # MultiEdit: p -> q/r (+2 -1), then two new lines inserted after "k" (+2)
    edits = [
        {"old_string": "p", "new_string": "q\nr"},
        {"old_string": "k", "new_string": "k\nl\nm"},
    ]
    edit_turn(service, sid, "t3", "MultiEdit", {"file_path": "p.py", "edits": edits}, ok=True)
    live = service.sessions.snapshot(sid).times
    assert (live.lines_added, live.lines_removed) == (2 + 2 + 2, 1 + 1)
    assert live.wall_duration_ms == 5_500 + 10_000 + 1_250
    service.close()

    # A reply whose request started 1.2 s before it ended (as a client that times its calls
    # stores it), written straight to the store.
    store = SqlStore.open(f"sqlite:///{db}")
    ended = clock.at + timedelta(seconds=4)
    store.append_message(
        Message(
            id=new_id(),
            session_id=sid,
            role="assistant",
            parts=(StoredPart(new_id(), TextPart("All green.")),),
            created_at=ended - timedelta(milliseconds=1_200),
            completed_at=ended,
            usage=USAGE,
            model="claude-sonnet-4-5",
        )
    )
    store.close()

    reloaded = open_service(db, clock).sessions.snapshot(sid).times
    assert (reloaded.lines_added, reloaded.lines_removed) == (6, 2)
    assert reloaded.wall_duration_ms == 5_500 + 10_000 + 1_250 + 4_000
    assert reloaded.api_duration_ms == 1_200
