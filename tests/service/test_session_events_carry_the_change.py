"""Listeners hear the change a session's owner applied, with the data and the snapshot it
produced: the usage monitor records what a change brought, a followed reply's growth included,
without reading the session again (on a real SQLite file, with a clock the test moves)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from tests.appending import append
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import TextPart, Usage
from tokend.core.usage.spend import SpendConfig
from tokend.core.usage.stats import RateConfig
from tokend.service.app import App, assemble_app, build_service
from tokend.service.session.listeners import SessionEvent
from tokend.service.session.reply_growth import grow_reply

WS = "file:///home/me/project"
# Oracle: Anthropic's published Claude Sonnet 4.5 prices, $3 and $15 per million tokens.
FIRST = Usage(input_tokens=100_000, output_tokens=1_000)  # a reply's first streamed record
FINAL = Usage(input_tokens=100_000, output_tokens=10_000)  # the same reply once complete
FINAL_USD = 100_000 * 3 / 1e6 + 10_000 * 15 / 1e6  # 0.45


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


def make(tmp_path) -> App:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    config = TokendConfig(
        spend=SpendConfig(user_daily_usd=10.0), rate=RateConfig(tpm_limit=1_000_000)
    )
    store = SqlStore.open(f"sqlite:///{tmp_path}/events.sqlite3")
    clock = Clock(datetime(2026, 3, 10, 15, 0, tzinfo=UTC))
    return assemble_app(build_service(store, catalog, config, clock=clock), serving=False)


def test_a_followed_reply_that_grows_is_spent_and_rated_in_full(tmp_path):
    """A follower imports an agent's reply at its first record, then grows it (GrowReply) to
    its final usage: today's spend and the tokens of the last minute are the final call's,
    as the session's own cost says. Before, the monitor had seen the message's id and kept
    the first record's figures."""
    app = make(tmp_path)
    service, monitor = app.service, app.usage
    sid = service.sessions.create_session("claude-sonnet-4-5", workspace_uri=WS).id
    append(service, sid, "user", [TextPart("fix the parser")])
    reply, _ = append(service, sid, "assistant", [TextPart("Looking.")], usage=FIRST)
    grown = asyncio.run(grow_reply(service, sid, reply.id, [TextPart("Fixed it.")], FINAL))
    assert grown
    assert service.sessions.snapshot(sid).cost_total_usd == pytest.approx(FINAL_USD)
    [user] = monitor.statuses(sid)
    assert user.scope == "user"
    assert user.spent_usd == pytest.approx(FINAL_USD)
    assert monitor.rate().tokens_per_minute == 110_000
    app.close()


def test_a_listener_hears_the_data_its_snapshot_was_built_from(tmp_path):
    """A listener told of an append hears that append's data, even when another listener
    applied a newer change meanwhile (a compaction boundary, heard first, nested): its
    snapshot and its data are of one version, and the message appended is in them. Before,
    listeners were given the snapshot and read the session's data, by then newer."""
    app = make(tmp_path)
    service = app.service
    sid = service.sessions.create_session("gpt-4o", workspace_uri=WS).id
    heard: list[SessionEvent] = []

    first = service.sessions.snapshot(sid).version + 1  # the append's

    def compacting(event: SessionEvent) -> None:  # a newer change while the first is told
        if event.data.version == first:
            service.changes.append_boundary(sid, "the user asked for a parser fix")

    service.listeners.subscribe_every(compacting)
    service.listeners.subscribe_every(heard.append)
    message, _ = append(service, sid, "user", [TextPart("fix the parser")])
    now = service.sessions.state(sid).data.version
    assert now > first
    assert [e.snapshot.version for e in heard] == [now, first]  # the nested one first
    boundary, appended = heard
    assert boundary.data.version == now
    assert appended.data.version == first and appended.snapshot.version == first
    assert [m.id for m in appended.appended] == [message.id]
    assert [m.id for m in appended.data.messages] == [message.id]
    assert boundary.appended == () and boundary.data.messages[0].summary
    app.close()
