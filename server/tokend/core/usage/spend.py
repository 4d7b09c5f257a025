"""Spend limits: USD per session, per workspace per day, per user per day. Pure.

A day is a calendar day in the configured time zone (`[spend] timezone`, "local" by default):
the per-day totals roll over at that zone's midnight. At `warn_ratio` of a limit (80% by
default) a warning; at 100% a warning, or with `on_limit = "refuse"` context/assemble is
refused with SpendLimitReached {limit, spent, scope}.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tokend.core.config_rules import Check, UserOnly

Scope = Literal["session", "workspace", "user"]
SCOPES: tuple[Scope, ...] = ("session", "workspace", "user")
OnLimit = Literal["warn", "refuse"]


def valid_timezone(value: Any) -> bool:
    if value == "local":
        return True
    if not isinstance(value, str) or not value:
        return False
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


_USD = Check(lambda v: v > 0, "a number of dollars > 0")
_TIMEZONE = Check(valid_timezone, 'an IANA time zone name ("Europe/Paris") or "local"')
_USER_WIDE = UserOnly("it applies to all of the user's workspaces together")


@dataclass(frozen=True, slots=True)
class SpendConfig:
    """`[spend]`: limits in US dollars (None: no limit), the warning ratio, the action at 100%."""

    session_usd: Annotated[float | None, _USD] = None
    workspace_daily_usd: Annotated[float | None, _USD] = None
    user_daily_usd: Annotated[float | None, _USD, _USER_WIDE] = None
    warn_ratio: Annotated[float, Check(lambda v: 0 < v <= 1, "a number above 0, at most 1")] = 0.8
    on_limit: OnLimit = "warn"
    timezone: Annotated[str, _TIMEZONE, _USER_WIDE] = (
        "local"  # IANA name ("Europe/Paris") or "local"
    )


def zone(name: str) -> tzinfo:
    """The tzinfo of a (checked) `timezone` setting; "local" is the system's zone now."""
    if name == "local":
        local = datetime.now().astimezone().tzinfo
        assert local is not None  # astimezone() always sets one
        return local
    return ZoneInfo(name)


def day_of(at: datetime, tz: tzinfo) -> date:
    """The calendar day of `at` (timezone-aware) in `tz`."""
    return at.astimezone(tz).date()


def day_span(day: date, tz: tzinfo) -> tuple[datetime, datetime] | None:
    """The instants [start, end) whose calendar day in `tz` is `day`, when the zone's offset is
    the same at both of its midnights and the day lasts 24 hours (local time then runs as UTC
    does all day); None on a day the clocks change: ask `day_of` of each instant instead."""
    start = datetime.combine(day, time(), tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=tz)
    if start.utcoffset() != end.utcoffset():
        return None
    start_utc, end_utc = start.astimezone(UTC), end.astimezone(UTC)
    if end_utc - start_utc != timedelta(days=1):
        return None
    return start_utc, end_utc


@dataclass(frozen=True, slots=True)
class SpendStatus:
    """One scope's figures in US dollars, and its level: "ok", "warning" (>= warn_ratio) or
    "reached" (>= the limit)."""

    scope: Scope
    limit_usd: float
    spent_usd: float
    level: str

    def message(self) -> str:
        what = {
            "session": "this session",
            "workspace": "this workspace today",
            "user": "you today",
        }[self.scope]
        pct = round(100 * self.spent_usd / self.limit_usd)
        head = "spend limit reached" if self.level == "reached" else "spend warning"
        return (
            f"{head}: ${self.spent_usd:,.2f} spent by {what}, {pct}% of the "
            f"${self.limit_usd:,.2f} limit ([spend] {_KEYS[self.scope]})"
        )


_KEYS = {"session": "session_usd", "workspace": "workspace_daily_usd", "user": "user_daily_usd"}


def spend_statuses(
    spent: dict[Scope, float], limits: dict[Scope, float | None], warn_ratio: float
) -> list[SpendStatus]:
    """The status of every scope that has a limit, in SCOPES order."""
    out: list[SpendStatus] = []
    for scope in SCOPES:
        limit = limits.get(scope)
        if limit is None:
            continue
        used = spent.get(scope, 0.0)
        level = "reached" if used >= limit else "warning" if used >= warn_ratio * limit else "ok"
        out.append(SpendStatus(scope, limit, round(used, 6), level))
    return out
