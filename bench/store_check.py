"""What the start-time store check costs: SQLite's `PRAGMA quick_check` on session stores of
growing size (real tokend stores, filled through SqlStore), in full and as the daemon runs it
(stopped after its time budget), beside `integrity_check` (which also compares every index with
its table). Main before this work ran no check: its start cost for this was zero.

Warm: the page cache holds the store (it was just written), as for a daemon restarted on a
store it used a moment ago. Cold: the store's pages dropped from the page cache first
(posix_fadvise DONTNEED on its file only), as after a reboot.

`python -m bench.run store_check` prints the section.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from tokend.adapters.store import SqlStore
from tokend.adapters.store.integrity import QUICK_CHECK_BUDGET_S, quick_check
from tokend.core.types import Message, SessionInfo, StoredPart, TextPart

SIZES_MB = [int(s) for s in os.environ.get("BENCH_STORE_CHECK_MB", "100,1000,3000").split(",")]
MESSAGE_CHARS = 20_000
ROUNDS = 3


def _fill(store: SqlStore, megabytes: int) -> None:
    now = datetime.now(UTC)
    messages = megabytes * 1_000_000 // MESSAGE_CHARS
    per_session = 500
    for s in range(0, messages, per_session):
        session_id = f"S{s:010d}"
        store.create_session(SessionInfo(session_id, "gpt-4o", now, now))
        for i in range(min(per_session, messages - s)):
            body = f"message {s + i} " + os.urandom(MESSAGE_CHARS // 2).hex()
            part = StoredPart(f"P{s + i:012d}", TextPart(body[:MESSAGE_CHARS]), 5_000)
            store.append_message(Message(f"M{s + i:012d}", session_id, "user", (part,), now))
    with store.engine.connect() as connection:
        connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))


def _seconds(store: SqlStore, pragma: str) -> float:
    raw = store.engine.raw_connection()
    try:
        started = time.perf_counter()
        rows = raw.driver_connection.execute(pragma).fetchall()
        elapsed = time.perf_counter() - started
    finally:
        raw.close()
    assert rows == [("ok",)], rows
    return elapsed


def _drop_cached_pages(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run() -> str:
    lines = []
    for megabytes in SIZES_MB:
        folder = Path(tempfile.mkdtemp(prefix="tokend-bench-check-"))
        try:
            store = SqlStore.open(f"sqlite:///{folder}/tokend.sqlite3")
            _fill(store, megabytes)
            size = (folder / "tokend.sqlite3").stat().st_size / 1e6
            quick = statistics.median(_seconds(store, "PRAGMA quick_check") for _ in range(ROUNDS))
            _drop_cached_pages(folder / "tokend.sqlite3")
            cold = _seconds(store, "PRAGMA quick_check")
            full = _seconds(store, "PRAGMA integrity_check")
            at_start = quick_check(store.engine)
            assert at_start is not None
            start = (
                f"{at_start.seconds:.2f} s, complete"
                if at_start.complete
                else f"{at_start.seconds:.2f} s, stopped at the budget (served unchecked)"
            )
            lines.append(
                f"| {size:,.0f} MB | {quick:.2f} s | {cold:.2f} s | {full:.2f} s | {start} | "
                "0 (no check) |"
            )
            store.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return "\n".join(
        [
            "### Store check at start: SQLite's quick_check (bench/store_check.py)",
            "",
            "A session store filled through SqlStore (messages of 20,000 characters), page cache "
            f"warm (cold: its pages dropped from the page cache first); warm quick_check median of "
            f"{ROUNDS}, the others once. The daemon runs "
            f"quick_check before `tokend: ready`, stopped after {QUICK_CHECK_BUDGET_S:.0f} s "
            "(then the store is served unchecked and a damaged page is reported by the request "
            "that reads it). Baseline: main before this work ran no check.",
            "",
            "| store | quick_check, warm | quick_check, cold | integrity_check, warm | "
            "daemon start (budgeted, warm) | baseline |",
            "|---:|---:|---:|---:|---:|---:|",
            *lines,
            "",
        ]
    )


if __name__ == "__main__":
    print(run())
