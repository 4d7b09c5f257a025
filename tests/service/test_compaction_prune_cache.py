"""Issue 21: a prune's `detail` tells what it costs in prompt cache. Oracle: Anthropic's published
Claude Sonnet 4.6 prices ($0.30 per million cache-read tokens, $3.75 per million 5-minute
cache-write tokens, $6 per million 1-hour ones) and the clock this test sets; a real SQLite store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.budget.limits import CompactionConfig
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import build_service
from tokend.service.compaction.tiers import compact
from tokend.service.service import TokendService

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
READ, WRITE_5M, WRITE_1H = 0.30 / 1e6, 3.75 / 1e6, 6.0 / 1e6


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def session(tmp_path, clock: Clock, one_hour: bool) -> tuple[TokendService, str]:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{tmp_path}/prune.sqlite3")
    service = build_service(store, catalog, TokendConfig(), clock=clock)
    sid = service.sessions.create_session("claude-sonnet-4-6").id

    def usage(read: int, written: int) -> Usage:  # about what the calls would report
        return Usage(10, 50, 0, read, written, written if one_hour else 0)

    append(service, sid, "user", [TextPart("read every log and tell me what broke")])
    for i in range(10):
        call = ToolCallPart(f"c{i}", "Read", {"file_path": f"logs/day_{i}.log"})
        append(service, sid, "assistant", [call], usage=usage(i * 12_600, 12_600))
        log = "".join(
            f"day {i} line {n}: worker {n % 7} restarted after a timeout\n" for n in range(900)
        )
        append(service, sid, "user", [ToolResultPart(f"c{i}", "Read", log)])
    for turn in ("and the metrics?", "and the alerts?"):
        append(service, sid, "user", [TextPart(turn)])
        append(service, sid, "assistant", [TextPart("looking")], usage=usage(126_000, 100))
    return service, sid


def figures(detail: str) -> tuple[int, float]:
    found = re.search(r"writes ([\d,]+) cached tokens again \(\$([\d.]+)", detail)
    assert found, detail
    return int(found.group(1).replace(",", "")), float(found.group(2))


def test_a_prune_while_the_cache_is_warm_says_what_the_rewrite_costs(tmp_path):
    clock = Clock(T0)
    service, sid = session(tmp_path, clock, one_hour=False)
    clock.at = T0 + timedelta(seconds=90)
    outcome = compact(service, sid, "prune")
    [action] = outcome.actions
    assert action.kind == "prune", action
    assert "prompt cache: warm (last call 90 s ago, 5-minute lifetime)" in action.detail
    rewrite, extra = figures(action.detail)
    # at most the messages the request carries after the prune
    assembled = assemble_context(service, sid, AssembleInput(format="anthropic"))
    assert 0 < rewrite <= assembled.total_tokens
    assert abs(extra - rewrite * (WRITE_5M - READ)) < 1e-4
    saved = float(re.search(r"saves \$([\d.]+) per later call", action.detail).group(1))
    assert abs(saved - action.tokens_freed * READ) < 1e-4
    assert "pays back after" in action.detail
    service.close()


def test_a_prune_after_the_cache_expired_costs_no_extra_write(tmp_path):
    clock = Clock(T0)
    service, sid = session(tmp_path, clock, one_hour=False)
    clock.at = T0 + timedelta(days=3)
    [action] = compact(service, sid, "prune").actions
    assert "prompt cache: expired (last call 3 days ago, 5-minute lifetime)" in action.detail
    assert "cost no extra cache write" in action.detail
    service.close()


def test_one_hour_entries_are_still_warm_after_ten_minutes(tmp_path):
    clock = Clock(T0)
    service, sid = session(tmp_path, clock, one_hour=True)
    clock.at = T0 + timedelta(minutes=10)
    [action] = compact(service, sid, "prune").actions
    assert "prompt cache: warm (last call 10 min ago, 1-hour lifetime)" in action.detail
    rewrite, extra = figures(action.detail)
    assert abs(extra - rewrite * (WRITE_1H - READ)) < 1e-4
    service.close()


def chatty_session(
    tmp_path, clock: Clock, window: int | None = None, config: TokendConfig | None = None
) -> tuple[TokendService, str]:
    """Two old 14k-token logs, then 38k of newer tool output and a long talk after them, the
    cache warm: clearing the two logs frees ~29k tokens and rewrites ~240k."""
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{tmp_path}/chatty.sqlite3")
    service = build_service(store, catalog, config or TokendConfig(), clock=clock)
    sid = service.sessions.create_session("claude-sonnet-4-6", context_window=window).id
    append(service, sid, "user", [TextPart("read the logs")])
    read = 0
    for i, lines in enumerate((900, 900, 2_400)):
        call = ToolCallPart(f"c{i}", "Read", {"file_path": f"logs/day_{i}.log"})
        append(service, sid, "assistant", [call], usage=Usage(10, 50, 0, read, 13_000))
        read += 13_000
        log = "".join(f"day {i} line {n}: worker {n % 7} restarted\n" for n in range(lines))
        append(service, sid, "user", [ToolResultPart(f"c{i}", "Read", log)])
    talk = " ".join(
        f"finding {n}: the retry loop in worker {n % 7} backs off" for n in range(8_000)
    )
    for turn in ("what did you find?", "and the alerts?"):
        append(service, sid, "user", [TextPart(turn)])
        append(service, sid, "assistant", [TextPart(talk)], usage=Usage(10, 50, 0, read, 100))
    return service, sid


def test_a_warm_cache_waits_for_a_batch_that_pays_and_an_expired_one_prunes(tmp_path):
    clock = Clock(T0)
    service, sid = chatty_session(tmp_path, clock)
    clock.at = T0 + timedelta(seconds=60)
    [action] = compact(service, sid, "prune").actions
    assert action.kind == "skip", action
    assert "the prompt cache is warm" in action.detail
    assert "would not pay" in action.detail
    clock.at = T0 + timedelta(minutes=6)
    [action] = compact(service, sid, "prune").actions
    assert action.kind == "prune", action
    assert action.parts == 2
    assert "prompt cache: expired (last call 6 min ago" in action.detail
    service.close()


def test_the_eager_policy_prunes_a_warm_cache_as_opencode_does(tmp_path):
    clock = Clock(T0)
    eager = TokendConfig(compaction=CompactionConfig(prune_policy="eager"))
    service, sid = chatty_session(tmp_path, clock, config=eager)
    clock.at = T0 + timedelta(seconds=60)
    [action] = compact(service, sid, "prune").actions
    assert action.kind == "prune", action
    assert "prompt cache: warm" in action.detail
    service.close()


def test_at_the_threshold_a_warm_cache_does_not_hold_a_prune_back(tmp_path):
    """The other way out is a summary, which rewrites the whole cache: the prune goes first."""
    clock = Clock(T0)
    service, sid = chatty_session(tmp_path, clock, window=180_000)
    snapshot = service.sessions.snapshot(sid)
    assert snapshot.used_tokens >= snapshot.autocompact_threshold
    clock.at = T0 + timedelta(seconds=60)
    [action] = compact(service, sid, "prune").actions
    assert action.kind == "prune", action
    assert "prompt cache: warm" in action.detail
    service.close()
