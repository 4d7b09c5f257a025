"""What the telemetry sink keeps until a reader collects: the gauge's prediction errors reach a
real Prometheus scrape as a histogram, whether they waited for the scrape or overflowed the
pending list first, underestimates (negative errors) included: the histogram holds |error| with
a direction. Oracle: the error each snapshot reported (the gauge's own figure)."""

from __future__ import annotations

import re
import urllib.request

import pytest

import tokend.adapters.telemetry as otel
from tests.appending import append
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.telemetry.settings import TelemetryConfig
from tokend.core.types import TextPart, Usage
from tokend.service.app import assemble_app, build_service

CALLS = 5


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = {}
    for line in text.splitlines():
        match = re.match(r"^(tokend_prediction_error\w*_(?:count|sum))\{.*\} (\S+)$", line)
        if match:
            found[match.group(1)] = found.get(match.group(1), 0.0) + float(match.group(2))
    return found


@pytest.mark.parametrize("pending", [1_000, 2], ids=["kept for the scrape", "overflowed"])
def test_prediction_errors_reach_a_scrape(tmp_path, monkeypatch, pending):
    monkeypatch.setattr(otel, "MAX_PENDING_ERRORS", pending)
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{tmp_path}/otel.sqlite3")
    config = TelemetryConfig(exporters=("prometheus",), prometheus_listen="127.0.0.1:0")
    service = build_service(store, catalog, TokendConfig(telemetry=config))
    app = assemble_app(service, serving=True)  # telemetry starts as in the daemon
    sink = app.telemetry
    errors = []
    try:
        sid = service.sessions.create_session("claude-sonnet-4-5").id
        for n in range(CALLS):
            append(service, sid, "user", [TextPart(f"step {n}: " + "run the tests " * 20)])
            usage = Usage(input_tokens=400 + 150 * n, output_tokens=30, cache_read_tokens=9_000)
            _, snapshot = append(service, sid, "assistant", [TextPart("ok")], usage=usage)
            if snapshot.last_call is not None and snapshot.last_call.error_pct is not None:
                errors.append(snapshot.last_call.error_pct)
        first = scrape(sink.prometheus_port)
        second = scrape(sink.prometheus_port)  # nothing recorded twice
    finally:
        app.close()
    assert len(errors) == CALLS - 1  # the first call of a window has no prediction
    for figures in (first, second):
        assert figures["tokend_prediction_error_percent_count"] == len(errors)
        assert figures["tokend_prediction_error_percent_sum"] == pytest.approx(
            sum(abs(e) for e in errors)
        )
