"""What the daemon's sessions spend and how fast they call: spend limits, rate headroom, and the
events telemetry counts. One UsageMonitor per app (service/app.py builds it).

It hears every session's changes with the messages each appended, and records their provider
calls (a reply that grows as a follower imports it takes its final figures), so a change costs
it O(messages appended), and it never reads a session again.
The first time a figure needs the past (a workspace or user daily limit, `[rate] tpm_limit`)
it reads the calls of the sessions updated since yesterday from the store (the replies'
usage, cost and times alone: no part, so a restart's seed of a 50,000-message session holds
its 25,000 calls, not its text), so
the per-day totals hold across daemon restarts; a command whose settings need none of them
(`tokend status` with no limit set) never reads them. Figures: US dollars; tokens; the
service's clock.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Protocol

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import SpendLimitReached, StoreError
from tokend.core.session.changes import GrowReply
from tokend.core.session.data import SessionData
from tokend.core.types import Message
from tokend.core.usage.spend import Scope, SpendStatus, day_of, spend_statuses, zone
from tokend.core.usage.stats import RATE_WINDOW, Call, RateHeadroom, call_tokens
from tokend.service.session.listeners import SessionEvent
from tokend.service.usage.ports import UsageService
from tokend.service.usage.spend_tally import DayTally, RecentCalls, regrow

log = logging.getLogger(__name__)

KEEP = timedelta(days=2)  # ledger entries older than this cannot count for "today" anywhere


class UsageSink(Protocol):
    """Where calls and session events go besides the ledger (telemetry)."""

    def record_call(self, call: Call) -> None: ...

    def record_session(self, session_id: str, workspace_uri: str | None) -> None: ...

    def record_compactions(self, session_id: str, workspace_uri: str | None, n: int) -> None: ...

    def record_prediction_error(
        self, session_id: str, workspace_uri: str | None, model: str, error_pct: float
    ) -> None: ...


Notice = Callable[[str, SpendStatus], None]  # (session id, the status newly reached)


class UsageMonitor:
    def __init__(self, service: UsageService) -> None:
        self._service = service
        self._lock = threading.Lock()
        self._calls: deque[Call] = deque()  # oldest first
        self._today = DayTally()  # today's spend, kept as calls are recorded
        self._recent = RecentCalls()  # the last minute's calls (rate headroom)
        self._compactions: dict[str, int] = {}
        self._last_error_call: dict[str, str] = {}
        self._announced: set[tuple[str, str, str]] = set()  # (scope, key, level)
        self._notices: list[Notice] = []
        self.sinks: list[UsageSink] = []
        self._started = service.clock.now()  # sinks hear of calls made from now on only
        self._seeded = False
        self._seed_lock = threading.Lock()
        self._unsubscribe = service.listeners.subscribe_every(self._on_change)

    def close(self) -> None:
        self._unsubscribe()

    # -- listening ------------------------------------------------------------------------

    def _needs_past(self, workspace: str | None) -> bool:
        """Whether a figure asked of this workspace's sessions counts calls of other sessions
        or of earlier processes (else the session's own snapshot is enough)."""
        spend = self._service.models.config_for(workspace).spend
        return bool(
            self._service.config.spend.user_daily_usd is not None
            or (workspace and spend.workspace_daily_usd is not None)
            or self._service.config.rate.tpm_limit is not None
        )

    def load_past(self) -> None:
        """Read the recent calls now rather than when first needed (a daemon, before its
        first request)."""
        self._seed_once()

    def _seed_once(self) -> None:
        """Read the recent calls from the store, once (calls recorded since are kept once)."""
        if self._seeded:
            return
        with self._seed_lock:
            if not self._seeded:
                self._seed()
                self._seeded = True

    def _seed(self) -> None:
        since = self._service.clock.now() - KEEP
        try:
            recent = self._service.store.listings.updated_since(since)
        except StoreError as exc:  # a damaged store: counted from now on
            log.warning("usage: the recent calls could not be read: %s", exc.message)
            return
        for session_id, workspace_uri in recent:
            try:
                messages = self._service.store.messages.load_replies(session_id)
            except StoreError as exc:  # that session's pages are damaged; the others count
                log.warning("usage: session %s could not be read: %s", session_id, exc.message)
                continue
            with self._lock:
                recorded = {call.message_id for call in self._calls}  # heard since it started
                for message in messages:
                    if message.id not in recorded:
                        self._record(message, workspace_uri, sinks=False)
        with self._lock:  # oldest first again, whatever was recorded before the seed
            self._calls = deque(sorted(self._calls, key=lambda c: c.at))
            self._today.forget()
            self._recent.reset(self._calls, self._service.clock.now())

    def _on_change(self, event: SessionEvent) -> None:
        snapshot = event.snapshot
        workspace = event.data.info.workspace_uri
        if not self._seeded and self._needs_past(workspace):
            self._seed_once()
        with self._lock:
            first = snapshot.session_id not in self._compactions
            for message in event.appended:
                self._record(message, workspace, sinks=True)
            if isinstance(event.change, GrowReply):
                self._regrow(event.change)
            before = self._compactions.get(snapshot.session_id, snapshot.compactions)
            self._compactions[snapshot.session_id] = snapshot.compactions
            self._prune()
        self._tell_sinks(snapshot, workspace, first, snapshot.compactions - before)
        self._announce(snapshot.session_id, workspace)

    def _record(self, message: Message, workspace: str | None, *, sinks: bool) -> None:
        if message.usage is None:
            return
        call = Call(
            message.session_id,
            workspace,
            message.model or "",
            message.completed_at or message.created_at,
            message.cost_usd or 0.0,
            message.usage,
            message.id,
        )
        self._calls.append(call)
        self._today.add(call)
        self._recent.add(call, self._service.clock.now())
        if sinks and call.at >= self._started:
            for sink in self.sinks:
                sink.record_call(call)

    def _regrow(self, change: GrowReply) -> None:
        """A reply that grew as a follower imported it: its call takes the final figures."""
        grown = regrow(self._calls, change.message_id, change.usage, change.cost_usd or 0.0)
        if grown is not None:
            was, now = grown
            self._today.add(replace(now, cost_usd=now.cost_usd - was.cost_usd))
            tokens = call_tokens(now.usage) - call_tokens(was.usage)
            self._recent.add_tokens(now.at, tokens, now.message_id, self._service.clock.now())

    def _prune(self) -> None:
        horizon = self._service.clock.now() - KEEP
        while self._calls and self._calls[0].at < horizon:
            self._calls.popleft()

    def _tell_sinks(
        self, snapshot: BudgetSnapshot, workspace: str | None, first: bool, compactions: int
    ) -> None:
        sid = snapshot.session_id
        call = snapshot.last_call
        for sink in self.sinks:
            if first and snapshot.version == 1:
                sink.record_session(sid, workspace)
            if compactions > 0:
                sink.record_compactions(sid, workspace, compactions)
            if call is not None and call.error_pct is not None:
                if self._last_error_call.get(sid) != call.message_id:
                    sink.record_prediction_error(sid, workspace, snapshot.model, call.error_pct)
        if call is not None:
            self._last_error_call[sid] = call.message_id

    # -- spend ----------------------------------------------------------------------------

    def statuses(self, session_id: str) -> list[SpendStatus]:
        """Every configured limit that applies to the session, with what was spent."""
        state = self._service.sessions.state(session_id)
        return self.statuses_of(state.data.info.workspace_uri, state.snapshot.cost_total_usd)

    def snapshot_warnings(self, data: SessionData, snapshot: BudgetSnapshot) -> tuple[str, ...]:
        """The spend warnings a snapshot carries (the service calls this as it builds one)."""
        statuses = self.statuses_of(data.info.workspace_uri, snapshot.cost_total_usd)
        return tuple(s.message() for s in statuses if s.level != "ok")

    def statuses_of(self, workspace: str | None, session_usd: float) -> list[SpendStatus]:
        """The limits that apply to a session of `workspace` that has spent `session_usd`."""
        user = self._service.config.spend
        local = self._service.models.config_for(workspace).spend
        if not self._seeded and self._needs_past(workspace):
            self._seed_once()
        tz = zone(user.timezone)
        now = self._service.clock.now()
        today = day_of(now, tz)
        with self._lock:  # kept as calls are recorded: O(1) whatever their number
            by_workspace, everywhere = self._today.totals(user.timezone, tz, today, self._calls)
            spent: dict[Scope, float] = {
                "session": session_usd,
                "workspace": by_workspace.get(workspace, 0.0),
                "user": everywhere,
            }
        limits: dict[Scope, float | None] = {
            "session": local.session_usd,
            "workspace": local.workspace_daily_usd if workspace else None,
            "user": user.user_daily_usd,
        }
        return spend_statuses(spent, limits, local.warn_ratio)

    def warnings(self, session_id: str) -> tuple[str, ...]:
        """The spend warnings of a session (the snapshot's `warnings` carry these)."""
        return tuple(s.message() for s in self.statuses(session_id) if s.level != "ok")

    def check_assemble(self, session_id: str) -> tuple[str, ...]:
        """Warnings for context/assemble; SpendLimitReached when a limit is reached and the
        session's settings say to refuse."""
        statuses = self.statuses(session_id)
        workspace = self._service.sessions.state(session_id).data.info.workspace_uri
        if self._service.models.config_for(workspace).spend.on_limit == "refuse":
            for status in statuses:
                if status.level == "reached":
                    raise SpendLimitReached(
                        status.message() + ': raise the limit, or set [spend] on_limit = "warn"',
                        {
                            "limit": status.limit_usd,
                            "spent": status.spent_usd,
                            "scope": status.scope,
                        },
                    )
        return tuple(s.message() for s in statuses if s.level != "ok")

    def subscribe_notices(self, notice: Notice) -> Callable[[], None]:
        """Call `notice` once each time a scope newly reaches the warning ratio or its limit."""
        self._notices.append(notice)
        return lambda: self._notices.remove(notice) if notice in self._notices else None

    def _announce(self, session_id: str, workspace: str | None) -> None:
        tz = zone(self._service.config.spend.timezone)
        today = day_of(self._service.clock.now(), tz).isoformat()
        keys = {"session": session_id, "workspace": f"{workspace}@{today}", "user": today}
        for status in self.statuses(session_id):
            if status.level == "ok":
                continue
            mark = (status.scope, keys[status.scope], status.level)
            if mark in self._announced:
                continue
            self._announced.add(mark)
            for notice in list(self._notices):
                try:
                    notice(session_id, status)
                except Exception:  # a broken client never stops the others
                    log.exception("spend notice failed")

    # -- rate -----------------------------------------------------------------------------

    def snapshot_rate(self, data: SessionData) -> RateHeadroom | None:
        """The rate headroom for a snapshot of `data` being built, when `[rate] tpm_limit` is
        set: the calls recorded so far, and this session's newest call if not recorded yet."""
        if self._service.config.rate.tpm_limit is None:
            return None
        rate = self.rate()
        newest = next((m for m in reversed(data.messages) if m.usage is not None), None)
        with self._lock:
            unseen = (
                newest is not None
                and not self._recent.holds(newest.id)
                and (newest.completed_at or newest.created_at)
                > self._service.clock.now() - RATE_WINDOW
            )
        if unseen and newest is not None and newest.usage is not None:
            rate = RateHeadroom(rate.tokens_per_minute + call_tokens(newest.usage), rate.tpm_limit)
        return rate

    def rate(self) -> RateHeadroom:
        """Input + output tokens of every call in the last 60 s against `[rate] tpm_limit`."""
        if self._service.config.rate.tpm_limit is not None:
            self._seed_once()
        now = self._service.clock.now()
        with self._lock:
            tokens = self._recent.tokens(now)
        return RateHeadroom(tokens, self._service.config.rate.tpm_limit)
