"""The usage monitor's running figures, kept as calls are recorded so that a snapshot costs
O(1) whatever the number of calls the daemon remembers (two days of them): today's spend per
workspace and in all, and the calls of the last minute (rate headroom).

Not thread-safe on its own: the usage monitor holds its lock around every call. Figures: US
dollars; tokens.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import replace
from datetime import date, datetime, tzinfo

from tokend.core.types import Usage
from tokend.core.usage.spend import day_of, day_span
from tokend.core.usage.stats import RATE_WINDOW, Call, call_tokens


class DayTally:
    """Today's spend, per workspace and in all, for one time zone setting and one calendar
    day; rebuilt from the remembered calls when the day or the zone changes (once a day)."""

    def __init__(self) -> None:
        self._key: tuple[str, date] | None = None
        self._tz: tzinfo | None = None
        self._span: tuple[datetime, datetime] | None = None  # the day's instants (day_span)
        self._by_workspace: dict[str | None, float] = {}
        self._all = 0.0

    def forget(self) -> None:
        """The remembered calls changed other than by `add` (a seed): rebuild when next read."""
        self._key = None

    def totals(
        self, zone_name: str, tz: tzinfo, today: date, calls: Iterable[Call]
    ) -> tuple[dict[str | None, float], float]:
        """(spend today per workspace, spend today in all) for `today` in `tz`."""
        if self._key != (zone_name, today):
            self._key, self._tz, self._span = (zone_name, today), tz, day_span(today, tz)
            self._by_workspace, self._all = {}, 0.0
            for call in calls:
                self._count(call, today)
        return self._by_workspace, self._all

    def add(self, call: Call) -> None:
        """A call just recorded: counted when it falls on the day being tallied."""
        if self._key is not None and self._tz is not None:
            self._count(call, self._key[1])

    def _count(self, call: Call, today: date) -> None:
        """`call` counted when made on `today`: between the day's two instants, compared, not
        converted to the zone (a restart's first snapshot rebuilt the tally over the 25,000
        calls of bench/scale_session's 50,000 messages, one conversion each), except on a day
        the clocks change."""
        assert self._tz is not None
        span = self._span
        if span is not None:
            if not span[0] <= call.at < span[1]:
                return
        elif day_of(call.at, self._tz) != today:
            return
        workspace = call.workspace_uri
        self._by_workspace[workspace] = self._by_workspace.get(workspace, 0.0) + call.cost_usd
        self._all += call.cost_usd


class RecentCalls:
    """The tokens of the calls in the last minute, as a running sum: each call is added when
    recorded (or once its time comes, when dated ahead of the clock) and taken off once the
    window has passed it; O(log n) per call, O(1) to read."""

    def __init__(self) -> None:
        # heaps of (at, order, tokens, message id): in the window, and dated after "now" so far
        self._window: list[tuple[datetime, int, int, str]] = []
        self._ahead: list[tuple[datetime, int, int, str]] = []
        self._ids: Counter[str] = Counter()  # the message ids of both heaps' entries
        self._sum = 0
        self._order = 0

    def reset(self, calls: Iterable[Call], now: datetime) -> None:
        self._window, self._ahead, self._ids, self._sum = [], [], Counter(), 0
        for call in calls:
            self.add(call, now)

    def add(self, call: Call, now: datetime) -> None:
        self.add_tokens(call.at, call_tokens(call.usage), call.message_id, now)

    def add_tokens(self, at: datetime, tokens: int, message_id: str, now: datetime) -> None:
        """`tokens` of the call `message_id` made `at` (a reply's growth: what it grew by)."""
        if at <= now - RATE_WINDOW:
            return
        self._order += 1
        entry = (at, self._order, tokens, message_id)
        self._ids[message_id] += 1
        if at > now:
            heapq.heappush(self._ahead, entry)
            return
        heapq.heappush(self._window, entry)
        self._sum += tokens

    def holds(self, message_id: str) -> bool:
        """Whether the call `message_id` is counted (in the window, or dated ahead of it)."""
        return self._ids[message_id] > 0

    def tokens(self, now: datetime) -> int:
        """Tokens of the calls in (now - window, now]."""
        while self._ahead and self._ahead[0][0] <= now:
            entry = heapq.heappop(self._ahead)
            heapq.heappush(self._window, entry)
            self._sum += entry[2]
        start = now - RATE_WINDOW
        while self._window and self._window[0][0] <= start:
            _, _, tokens, message_id = heapq.heappop(self._window)
            self._sum -= tokens
            self._ids[message_id] -= 1
            if self._ids[message_id] <= 0:
                del self._ids[message_id]
        return self._sum


def regrow(
    calls: deque[Call], message_id: str, usage: Usage, cost_usd: float
) -> tuple[Call, Call] | None:
    """The call of `message_id` given its final usage and cost in `calls`, oldest first (a reply
    that grew as it streamed: among the newest, found from the end); (before, after), or None
    when it is not there (recorded before the two days kept, or never)."""
    for index in range(len(calls) - 1, -1, -1):
        was = calls[index]
        if was.message_id == message_id:
            calls[index] = replace(was, usage=usage, cost_usd=cost_usd)
            return was, calls[index]
    return None
