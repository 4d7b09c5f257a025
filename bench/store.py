"""Session store: append rate and load times of SqlStore on a real SQLite file (WAL).

One session of 10,000 messages, each with 2 parts (a text part and a tool result of a few hundred
chars), a summary message (compaction boundary) 100 messages before the end. Baselines measured in
the same run: the raw sqlite3 module doing the same inserts / reading the same rows (no ORM, no
conversion to domain objects), and the full load against the boundary load.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tokend.adapters.store import SqlStore, new_id
from tokend.adapters.store.url import sqlite_url
from tokend.core.commit import Compacted, SessionCommit
from tokend.core.types import (
    CompactionPart,
    Message,
    SessionInfo,
    StoredPart,
    TextPart,
    ToolResultPart,
)

MESSAGES = 10_000
TAIL_AFTER_BOUNDARY = 100
T0 = datetime(2026, 1, 1, tzinfo=UTC)
OUTPUT = "def handler(request):\n    return respond(request.body)  # line of tool output\n" * 5


def _messages(session_id: str) -> list[Message]:
    boundary = MESSAGES - TAIL_AFTER_BOUNDARY
    made = []
    for i in range(MESSAGES):
        at = T0 + timedelta(seconds=i)
        if i == boundary:
            parts = (StoredPart(new_id(), CompactionPart("summary " * 50)),)
        else:
            parts = (
                StoredPart(new_id(), TextPart(f"message {i}: please look at the handler")),
                StoredPart(new_id(), ToolResultPart(f"call_{i}", "read_file", OUTPUT)),
            )
        made.append(Message(new_id(), session_id, "assistant", parts, at, summary=(i == boundary)))
    return made


def _median_seconds(action: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def _raw_sqlite_append(path: Path, messages: list[Message]) -> float:
    """Seconds for the same inserts, one transaction per message, through sqlite3 directly."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE m (id TEXT PRIMARY KEY, session_id TEXT, seq INT, role TEXT, t TEXT)")
    db.execute(
        "CREATE TABLE p (id TEXT PRIMARY KEY, message_id TEXT, idx INT, kind TEXT, data TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX m_seq ON m (session_id, seq)")
    db.execute("CREATE UNIQUE INDEX p_idx ON p (message_id, idx)")
    start = time.perf_counter()
    for seq, message in enumerate(messages, 1):
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO m VALUES (?, ?, ?, ?, ?)",
            (message.id, message.session_id, seq, message.role, message.created_at.isoformat()),
        )
        db.executemany(
            "INSERT INTO p VALUES (?, ?, ?, ?, ?)",
            [
                (s.id, message.id, i, s.part.kind, json.dumps({"text": str(s.part)}))
                for i, s in enumerate(message.parts)
            ],
        )
        db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def _raw_sqlite_read(path: Path, session_id: str) -> Callable[[], object]:
    def read() -> object:
        db = sqlite3.connect(path)
        rows = db.execute(
            "SELECT id, role, created_at FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        parts = db.execute(
            "SELECT p.message_id, p.id, p.kind, p.data FROM parts p JOIN messages m"
            " ON p.message_id = m.id WHERE m.session_id = ? ORDER BY m.seq, p.idx",
            (session_id,),
        ).fetchall()
        db.close()
        return rows, parts

    return read


def run() -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite3"
        url = sqlite_url(path)
        start = time.perf_counter()
        store = SqlStore.open(url)
        first_open = time.perf_counter() - start
        store.create_session(SessionInfo("s", "gpt-4o", T0, T0))
        messages = _messages("s")

        start = time.perf_counter()
        for message in messages:
            store.append_message(message)
        append_seconds = time.perf_counter() - start
        # The boundary as a compaction writes it: the summary covers every message before it.
        boundary = messages[MESSAGES - TAIL_AFTER_BOUNDARY]
        covered = tuple(m.id for m in messages[: MESSAGES - TAIL_AFTER_BOUNDARY])
        store.commit_change(
            "s", SessionCommit(compacted=(Compacted(covered, boundary.id, boundary.created_at),))
        )
        raw_append_seconds = _raw_sqlite_append(Path(folder) / "raw.sqlite3", messages)

        assert len(store.messages.load_all_messages("s")) == MESSAGES
        assert len(store.messages.load_messages("s")) == TAIL_AFTER_BOUNDARY
        full = _median_seconds(lambda: store.messages.load_all_messages("s"), 5)
        tail = _median_seconds(lambda: store.messages.load_messages("s"), 21)
        raw_read = _median_seconds(_raw_sqlite_read(path, "s"), 5)
        store.close()
        reopen = _median_seconds(lambda: SqlStore.open(url).close(), 5)

    append_rate = MESSAGES / append_seconds
    raw_rate = MESSAGES / raw_append_seconds
    rows = [
        (
            "append_message (2 parts, 1 transaction each)",
            f"{append_rate:,.0f} msg/s",
            f"raw sqlite3 same inserts: {raw_rate:,.0f} msg/s",
            f"{raw_rate / append_rate:.1f}x",
        ),
        (
            "load_all_messages, 10,000 msgs / 19,901 parts",
            f"{full * 1000:,.0f} ms",
            f"raw sqlite3 fetch of the rows: {raw_read * 1000:,.0f} ms",
            f"{full / raw_read:.1f}x",
        ),
        (
            f"load_messages from boundary ({TAIL_AFTER_BOUNDARY} msgs)",
            f"{tail * 1000:,.2f} ms",
            f"full load: {full * 1000:,.0f} ms",
            f"full is {full / tail:,.0f}x slower",
        ),
        (
            "SqlStore.open, schema at head",
            f"{reopen * 1000:,.1f} ms",
            f"first open (migrate from nothing): {first_open * 1000:,.0f} ms",
            "",
        ),
    ]
    lines = [
        "### Session store (SqlStore on SQLite, WAL)",
        "",
        "| operation | SqlStore | baseline (same run) | ratio |",
        "| --- | --- | --- | --- |",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        f"Measured by appending {MESSAGES:,} messages (2 parts each; one summary message "
        f"{TAIL_AFTER_BOUNDARY} from the end) to a fresh SQLite file in a temp folder, one "
        "transaction per append; loads and opens are medians of 5 runs (boundary load: 21); the "
        "raw sqlite3 baselines skip the ORM and the conversion to domain objects.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
