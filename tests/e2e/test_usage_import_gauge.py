"""The live gauge, fed a real Claude Code session call by call, predicts each call's input."""

from __future__ import annotations

from tests.conftest import BIG_SESSION, sessions_dir_or_skip
from tokend.commands.importer import import_events
from tokend.core.usage.accounting import summarize_abs_errors
from tokend.service.app import open_service


def test_gauge_predicts_real_provider_usage(tmp_path):
    sessions_dir_or_skip()
    service = open_service(None, f"sqlite:///{tmp_path}/gauge.sqlite3")
    outcome = import_events(service, BIG_SESSION)
    data = service.sessions.state(outcome.session_id).data
    summary = summarize_abs_errors(e.abs_error_pct for e in data.errors)
    # 152 calls, minus the first of each window (2): every other call was predicted before it was made
    assert outcome.calls == 152 and outcome.compactions == 1
    assert summary.count == 150
    assert summary.median_abs_error_pct <= 0.1
    assert summary.p90_abs_error_pct <= 0.6
    snap = service.sessions.snapshot(outcome.session_id)
    assert snap.context_window == 200_000  # Claude Code's standard window, not the catalog's 1M
    assert snap.compactions == 1 and not snap.estimated
    assert sum(item.tokens for item in snap.breakdown) == snap.used_tokens
    service.close()

    # the same session reopened from SQLite gives the same gauge
    reopened = open_service(None, f"sqlite:///{tmp_path}/gauge.sqlite3")
    again = reopened.sessions.snapshot(outcome.session_id)
    assert again.used_tokens == snap.used_tokens
    assert again.totals == snap.totals
    # the estimate errors survive the reload
    assert reopened.sessions.state(outcome.session_id).data.errors == data.errors
    reopened.close()
