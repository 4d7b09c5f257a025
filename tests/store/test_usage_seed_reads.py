"""The usage monitor's seed (a daemon's start: the calls of the sessions updated in the last two
days, for the day's spend and the rate headroom) reads the calls, not the messages' text.

It read every message of those sessions with its parts and kept only each reply's usage, cost and
time: at 50,000 messages of bench/scale_session's ~3 KB tool results, 75 MB of text read and
dropped before the daemon's first request, and the restarted daemon larger than while it built
the session (issue 22; the lead's PostgreSQL runs, 324-326 against 304 MiB). Counted, not timed,
on both engines: the statements the seed sends (none names the parts table) and the Python
memory it allocates at its peak (tracemalloc), against the bytes of text the test appended. The
seeded figures are the reported ones summed by hand (Claude Sonnet 4.5's published prices, $3 and
$15 per million tokens): the day's spend and the last minute's tokens."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.appending import append
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.core.usage.spend import SpendConfig
from tokend.core.usage.stats import RateConfig
from tokend.service.app import App, assemble_app, build_service

START = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
CALLS = 30
OUTPUT_CHARS = 64_000  # each tool result's text: 1.9 MB of text in all


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def make(db_url: str, clock: Clock) -> App:
    """A daemon's parts on the store, with a day's limit and a rate limit (both need the past)."""
    catalog = WorkspaceSettings().for_workspace(None).catalog
    config = TokendConfig(
        spend=SpendConfig(user_daily_usd=1_000.0, timezone="UTC"),
        rate=RateConfig(tpm_limit=10**9),
    )
    return assemble_app(build_service(SqlStore.open(db_url), catalog, config, clock=clock))


@contextmanager
def statements(engine: Any) -> Iterator[list[str]]:
    sent: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def _output(i: int) -> str:
    line = f"src/module_{i:05d}.py:{{}}: E501 line too long in handle_request\n"
    text = "".join(line.format(k) for k in range(OUTPUT_CHARS // 50))
    return text[:OUTPUT_CHARS]


def test_the_seed_reads_each_call_and_none_of_the_text(db_url: str, tmp_path: Path) -> None:
    clock = Clock(START)
    app = make(db_url, clock)
    service = app.service
    sid = service.sessions.create_session("claude-sonnet-4-5", workspace_uri="file:///ws").id
    written, spent, last_minute = 0, 0.0, 0
    for i in range(CALLS):
        clock.at = START + timedelta(seconds=4 * i)
        usage = Usage(input_tokens=1_000 + i, output_tokens=10 + i, cache_read_tokens=100 * i)
        call = ToolCallPart(call_id=f"c{i}", name="Bash", input={"n": i})
        append(service, sid, "assistant", [call], usage=usage)
        output = _output(i)
        append(service, sid, "tool", [ToolResultPart(call_id=f"c{i}", name="Bash", output=output)])
        append(service, sid, "user", [TextPart(f"go on {i}")])
        written += len(output)
        spent += (1_000 + i) * 3 / 1e6 + (10 + i) * 15 / 1e6 + 100 * i * 0.3 / 1e6
        if 4 * i > 4 * (CALLS - 1) - 60:
            last_minute += 1_000 + i + 10 + i + 100 * i
    service.close()

    reopened = make(db_url, clock)  # a restart: the monitor knows no call yet
    try:
        tracemalloc.start()
        try:
            with statements(reopened.service.store.engine) as sent:
                reopened.usage.load_past()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert sent, "the seed sent no statement"
        assert not [s for s in sent if re.search(r"\bparts\b", s)], sent
        # main 8148dde: 1.39 MB at its peak on SQLite, 1.38 on PostgreSQL; now 0.15
        assert peak < written // 8, (peak, written)

        status = reopened.usage.statuses_of("file:///ws", 0.0)
        assert [s.spent_usd for s in status if s.scope == "user"] == [pytest.approx(spent)]
        assert reopened.usage.rate().tokens_per_minute == last_minute
    finally:
        reopened.service.close()
