"""Today's spend (service.usage.spend_tally.DayTally), rebuilt from the calls the usage monitor
remembers: after a restart's seed, the first snapshot's spend warnings rebuild it over every
call of the last two days (25,000 at bench/scale_session's 50,000 messages), and each call was
converted to the configured zone to find its calendar day (issue 22: the first snapshot and the
first `context/assemble` after a restart). Now a call is compared with the day's first and last
instants, and converted only on a day the clocks change.

Counted, not timed: the conversions (`day_of`) a rebuild makes. Oracle: a plain reference in
the test (each call's local date by `astimezone`), on days around every change of the clocks in
2026 of zones whose clocks change at 2 or 3 a.m., at midnight (Santiago, Havana, Beirut), by
half an hour (Lord Howe), or never."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.types import Usage
from tokend.core.usage.stats import Call
from tokend.service.usage import spend_tally
from tokend.service.usage.spend_tally import DayTally

ZONES = ("UTC", "Europe/Paris", "America/New_York", "America/Santiago", "America/Havana",
         "Asia/Beirut", "Australia/Lord_Howe", "Asia/Kolkata")  # fmt: skip
WORKSPACES = (None, "file:///a", "file:///b")


def _changes(name: str) -> list[datetime]:
    """The instants of 2026 at which `name`'s offset changes (found hour by hour), or the
    year's first instant for a zone that never changes."""
    tz, at = ZoneInfo(name), datetime(2026, 1, 1, tzinfo=UTC)
    found = []
    while at.year == 2026:
        if (at + timedelta(hours=1)).astimezone(tz).utcoffset() != at.astimezone(tz).utcoffset():
            found.append(at)
        at += timedelta(hours=1)
    return found or [datetime(2026, 1, 1, tzinfo=UTC)]


CHANGES = {name: _changes(name) for name in ZONES}


def _reference(
    calls: list[Call], tz: ZoneInfo, today: date
) -> tuple[dict[str | None, float], float]:
    by_workspace: dict[str | None, float] = {}
    everywhere = 0.0
    for call in calls:
        if call.at.astimezone(tz).date() == today:
            by_workspace[call.workspace_uri] = (
                by_workspace.get(call.workspace_uri, 0.0) + call.cost_usd
            )
            everywhere += call.cost_usd
    return by_workspace, everywhere


def _call(at: datetime, n: int) -> Call:
    return Call(f"s{n % 3}", WORKSPACES[n % 3], "gpt-4o", at, 0.25 + n % 7, Usage(100, 10), f"m{n}")


def test_a_rebuild_converts_no_call_to_the_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    tz = ZoneInfo("Europe/Paris")
    start = datetime(2026, 6, 10, 8, 0, tzinfo=UTC)  # two days of calls, 5,000 in all
    calls = [_call(start + timedelta(seconds=35 * n), n) for n in range(5_000)]
    conversions = []
    day_of = spend_tally.day_of
    monkeypatch.setattr(
        spend_tally, "day_of", lambda at, tz: conversions.append(at) or day_of(at, tz)
    )
    tally = DayTally()
    got = tally.totals("Europe/Paris", tz, date(2026, 6, 11), calls)
    assert len(conversions) == 0  # main 8148dde: 5,000, one a call
    assert got == _reference(calls, tz, date(2026, 6, 11))
    assert got[1] > 0 and got[1] < sum(c.cost_usd for c in calls)


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    change=st.integers(min_value=0, max_value=10),
    offsets=st.lists(st.integers(min_value=-3 * 86_400, max_value=3 * 86_400), max_size=40),
    day_shift=st.integers(min_value=-2, max_value=2),
)
def test_the_day_is_the_zone_calendar_day_around_each_change_of_the_clocks(
    zone: str, change: int, offsets: list[int], day_shift: int
) -> None:
    tz = ZoneInfo(zone)
    around = CHANGES[zone][change % len(CHANGES[zone])]
    calls = [_call(around + timedelta(seconds=s), n) for n, s in enumerate(sorted(offsets))]
    today = around.astimezone(tz).date() + timedelta(days=day_shift)
    tally = DayTally()
    assert tally.totals(zone, tz, today, calls) == _reference(calls, tz, today)
    later = _call(around + timedelta(seconds=offsets[0] if offsets else 0), 99)
    tally.add(later)  # a call recorded after the rebuild counts the same way
    assert tally.totals(zone, tz, today, calls) == _reference([*calls, later], tz, today)
