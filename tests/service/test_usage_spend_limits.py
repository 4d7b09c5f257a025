"""Spend limits and rate headroom on a real SQLite file, with a clock the test moves: a limit
crossed by reported usage warns, then refuses when so configured; per-day limits roll over at
the configured zone's midnight; tokens per minute slide over 60 s across sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.errors import SpendLimitReached
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import TextPart, Usage
from tokend.core.usage.spend import SpendConfig
from tokend.core.usage.stats import RateConfig
from tokend.service.app import App, assemble_app, build_service
from tokend.service.service import TokendService

NEW_YORK = ZoneInfo("America/New_York")
WS = "file:///home/me/project"
# Oracle: Anthropic's published Claude Sonnet 4.5 prices, $3 and $15 per million tokens.
CALL = Usage(input_tokens=100_000, output_tokens=10_000)
CALL_USD = 100_000 * 3 / 1e6 + 10_000 * 15 / 1e6  # 0.45


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def make(tmp_path, clock: Clock, spend: SpendConfig, rate: RateConfig | None = None) -> App:
    """The app's parts around a service on the test's clock (service/app.py)."""
    catalog = WorkspaceSettings().for_workspace(None).catalog
    config = TokendConfig(spend=spend, rate=rate or RateConfig())
    store = SqlStore.open(f"sqlite:///{tmp_path}/spend.sqlite3")
    return assemble_app(build_service(store, catalog, config, clock=clock))


def assembled_for(app: App, sid: str):
    """context/assemble as the daemon runs it: the app's usage monitor checks the spend."""
    return assemble_context(app.service, sid, AssembleInput(), usage=app.usage)


def call(service: TokendService, sid: str, usage: Usage = CALL) -> None:
    append(service, sid, "user", [TextPart("go on")])
    append(service, sid, "assistant", [TextPart("done")], usage=usage)


def test_a_workspace_limit_warns_at_80_percent_then_refuses(tmp_path):
    clock = Clock(datetime(2026, 3, 10, 15, 0, tzinfo=UTC))
    spend = SpendConfig(workspace_daily_usd=1.0, on_limit="refuse", timezone="America/New_York")
    app = make(tmp_path, clock, spend)
    service, monitor = app.service, app.usage
    heard = []
    monitor.subscribe_notices(lambda sid, status: heard.append((sid, status.level, status.scope)))
    first = service.sessions.create_session("claude-sonnet-4-5", workspace_uri=WS).id
    second = service.sessions.create_session("claude-sonnet-4-5", workspace_uri=WS).id
    call(service, first)
    assert service.sessions.snapshot(first).cost_total_usd == pytest.approx(CALL_USD)
    assert monitor.warnings(first) == ()
    call(service, second)  # $0.90 in the workspace today: 90% of the limit
    assert monitor.warnings(first) == (
        "spend warning: $0.90 spent by this workspace today, 90% of the $1.00 limit "
        "([spend] workspace_daily_usd)",
    )
    assembled = assembled_for(app, first)
    assert any("spend warning" in w for w in assembled.warnings)
    call(service, first)  # $1.35: reached
    with pytest.raises(SpendLimitReached) as refused:
        assembled_for(app, second)
    assert refused.value.code == -33020
    assert refused.value.data == {
        "limit": 1.0,
        "spent": pytest.approx(3 * CALL_USD),
        "scope": "workspace",
    }
    call(service, second)  # still over: no new notice
    assert heard == [(second, "warning", "workspace"), (first, "reached", "workspace")]


def test_warn_is_the_default_at_100_percent(tmp_path):
    clock = Clock(datetime(2026, 3, 10, 15, 0, tzinfo=UTC))
    app = make(tmp_path, clock, SpendConfig(session_usd=0.5))
    service = app.service
    sid = service.sessions.create_session("claude-sonnet-4-5").id
    call(service, sid)
    call(service, sid)
    assembled = assembled_for(app, sid)  # not refused
    assert (
        "spend limit reached: $0.90 spent by this session, 180% of the $0.50 limit"
        in (assembled.warnings[-1])
    )


def test_per_day_limits_roll_over_at_the_zones_midnight(tmp_path):
    # 23:50 in New York is 04:50 UTC the next day (EDT): the UTC day already changed.
    clock = Clock(datetime(2026, 6, 11, 3, 50, tzinfo=UTC))
    spend = SpendConfig(user_daily_usd=1.0, on_limit="refuse", timezone="America/New_York")
    app = make(tmp_path, clock, spend)
    service = app.service
    sid = service.sessions.create_session("claude-sonnet-4-5", workspace_uri=WS).id
    for _ in range(3):
        call(service, sid)
    with pytest.raises(SpendLimitReached) as refused:
        assembled_for(app, sid)
    assert refused.value.data["scope"] == "user"
    clock.at = datetime(2026, 6, 11, 3, 59, tzinfo=UTC)  # 23:59 in New York: same day
    with pytest.raises(SpendLimitReached):
        assembled_for(app, sid)
    clock.at = datetime(2026, 6, 11, 4, 1, tzinfo=UTC)  # 00:01 in New York: a new day
    assert clock.at.astimezone(NEW_YORK).day == 11
    assembled_for(app, sid)
    assert app.usage.warnings(sid) == ()


def test_day_totals_survive_a_restart(tmp_path):
    clock = Clock(datetime(2026, 3, 10, 15, 0, tzinfo=UTC))
    spend = SpendConfig(user_daily_usd=1.0, timezone="UTC")
    app = make(tmp_path, clock, spend)
    service = app.service
    sid = service.sessions.create_session("claude-sonnet-4-5").id
    call(service, sid)
    call(service, sid)
    service.close()
    reopened = make(tmp_path, clock, spend)
    assert reopened.service.sessions.snapshot(sid).cost_total_usd == pytest.approx(2 * CALL_USD)
    assert reopened.usage.statuses(sid)[0].spent_usd == pytest.approx(2 * CALL_USD)


def test_rate_headroom_slides_over_60_seconds_across_sessions(tmp_path):
    start = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
    clock = Clock(start)
    app = make(tmp_path, clock, SpendConfig(), RateConfig(tpm_limit=300_000))
    service, monitor = app.service, app.usage
    a = service.sessions.create_session("claude-sonnet-4-5").id
    b = service.sessions.create_session("gpt-4o").id
    call(service, a, Usage(input_tokens=1_000, output_tokens=500, cache_read_tokens=50_000))
    clock.at = start + timedelta(seconds=30)
    call(service, b, Usage(input_tokens=20_000, output_tokens=2_000))
    # Oracle: the reported figures, summed by hand.
    assert monitor.rate().tokens_per_minute == 51_500 + 22_000
    assert monitor.rate().headroom_tokens == 300_000 - 73_500
    clock.at = start + timedelta(seconds=61)  # the first call slid out
    assert monitor.rate().tokens_per_minute == 22_000
    assert monitor.rate().used_percentage == round(100 * 22_000 / 300_000, 1)
    clock.at = start + timedelta(seconds=95)
    assert monitor.rate().tokens_per_minute == 0
