"""OpenTelemetry through real HTTP: a Prometheus scrape of the loopback endpoint after a few
appends, and an OTLP export reaching a receiver on 127.0.0.1 that the test runs. Oracles: the
usage the test reported, and Anthropic's published prices."""

from __future__ import annotations

import re
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from tests.appending import append
from tokend.adapters.store import SqlStore
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.settings.tables import TokendConfig
from tokend.core.telemetry.settings import TelemetryConfig
from tokend.core.types import TextPart, Usage
from tokend.service.app import assemble_app, build_service
from tokend.service.service import TokendService

WS = "file:///home/me/project"
CALLS = [
    Usage(
        input_tokens=1_000, output_tokens=200, cache_read_tokens=30_000, cache_write_tokens=4_000
    ),
    Usage(input_tokens=500, output_tokens=100, cache_read_tokens=34_000),
]
# Claude Sonnet 4.5: $3 input, $15 output, $0.30 cache read, $3.75 5-minute cache write per MTok.
COST = (
    sum(
        u.input_tokens * 3
        + u.output_tokens * 15
        + u.cache_read_tokens * 0.3
        + u.cache_write_tokens * 3.75
        for u in CALLS
    )
    / 1e6
)


def make(tmp_path, telemetry: TelemetryConfig) -> TokendService:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{tmp_path}/otel.sqlite3")
    return build_service(store, catalog, TokendConfig(telemetry=telemetry))


def run_session(service: TokendService) -> str:
    sid = service.sessions.create_session("claude-sonnet-4-5", workspace_uri=WS).id
    for usage in CALLS:
        append(service, sid, "user", [TextPart("next step")])
        append(service, sid, "assistant", [TextPart("done")], usage=usage)
    return sid


def test_a_prometheus_scrape_shows_the_token_and_cost_counters(tmp_path):
    config = TelemetryConfig(exporters=("prometheus",), prometheus_listen="127.0.0.1:0")
    service = make(tmp_path, config)
    app = assemble_app(service, serving=True)  # telemetry starts as in the daemon
    sink = app.telemetry
    try:
        sid = run_session(service)
        url = f"http://127.0.0.1:{sink.prometheus_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    finally:
        app.close()
    samples = {}
    for line in text.splitlines():
        match = re.match(r"^(\w+)\{(.*)\} (\S+)$", line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            samples.setdefault(match.group(1), []).append((labels, float(match.group(3))))

    def tokens(kind: str) -> float:
        return sum(
            v
            for labels, v in samples["tokend_token_usage_tokens_total"]
            if labels["type"] == kind and labels["session_id"] == sid and labels["workspace"] == WS
        )

    assert tokens("input") == sum(u.input_tokens for u in CALLS)
    assert tokens("output") == sum(u.output_tokens for u in CALLS)
    assert tokens("cacheRead") == sum(u.cache_read_tokens for u in CALLS)
    assert tokens("cacheCreation") == sum(u.cache_write_tokens for u in CALLS)
    ((cost_labels, cost),) = samples["tokend_cost_usage_USD_total"]
    assert cost == pytest.approx(COST) and cost_labels["model"] == "claude-sonnet-4-5"
    assert [v for _, v in samples["tokend_session_count_total"]] == [1.0]


class Receiver(BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_an_otlp_export_reaches_a_real_http_receiver(tmp_path):
    http = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    Receiver.bodies = []
    config = TelemetryConfig(
        exporters=("otlp",),
        otlp_endpoint=f"http://127.0.0.1:{http.server_port}/v1/metrics",
        metric_names="claude_code",
        resource_attributes={"team": "infra", "department": "eng"},
        export_interval_s=3600,  # only the explicit flush exports
    )
    service = make(tmp_path, config)
    app = assemble_app(service, serving=True)  # telemetry starts as in the daemon
    sink = app.telemetry
    try:
        sid = run_session(service)
        sink.flush()
    finally:
        app.close()
        http.shutdown()
    assert Receiver.bodies and Receiver.bodies[0][0] == "/v1/metrics"
    request = ExportMetricsServiceRequest()
    request.ParseFromString(Receiver.bodies[0][1])
    resource = request.resource_metrics[0].resource
    attributes = {a.key: a.value.string_value for a in resource.attributes}
    assert attributes["team"] == "infra" and attributes["department"] == "eng"
    metrics = {
        m.name: m for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    by_type = {}
    for point in metrics["claude_code.token.usage"].sum.data_points:
        labels = {a.key: a.value.string_value for a in point.attributes}
        assert labels["session.id"] == sid and labels["model"] == "claude-sonnet-4-5"
        by_type[labels["type"]] = by_type.get(labels["type"], 0) + point.as_int
    assert by_type == {
        "input": 1_500,
        "output": 300,
        "cacheRead": 64_000,
        "cacheCreation": 4_000,
    }
    (cost,) = metrics["claude_code.cost.usage"].sum.data_points
    assert cost.as_double == pytest.approx(COST)
