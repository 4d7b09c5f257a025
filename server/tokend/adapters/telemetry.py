"""OpenTelemetry metrics (the optional extra `tokend[otel]`): a UsageSink over the SDK.

Instruments (tokend's names; with `metric_names = "claude_code"` the token and cost counters
and the session count take Claude Code's, so its dashboards work unchanged):

| tokend                     | claude_code                | unit   | attributes                          |
|----------------------------|----------------------------|--------|-------------------------------------|
| tokend.token.usage         | claude_code.token.usage    | tokens | model, type, session.id, workspace  |
| tokend.cost.usage          | claude_code.cost.usage     | USD    | model, session.id, workspace        |
| tokend.session.count       | claude_code.session.count  | 1      | session.id, workspace               |
| tokend.compaction.count    | (same)                     | 1      | session.id, workspace               |
| tokend.prediction.error    | (same)                     | %      | model, session.id, workspace        |

`type` is input, output, cacheRead or cacheCreation. Exporters: a Prometheus endpoint on
loopback (its own registry, its own HTTP server thread), OTLP over HTTP, and the console
(stderr: stdout is the JSON-RPC wire). Importing this module needs the SDK installed.
"""

from __future__ import annotations

import sys
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, start_http_server

from tokend.core.telemetry_settings import TelemetryConfig, parse_listen
from tokend.service.usage import Call

_NAMES = {
    "tokend": ("tokend.token.usage", "tokend.cost.usage", "tokend.session.count"),
    "claude_code": (
        "claude_code.token.usage",
        "claude_code.cost.usage",
        "claude_code.session.count",
    ),
}


class OtelSink:
    """Counts calls, sessions, compactions and the gauge's prediction error."""

    def __init__(self, config: TelemetryConfig, version: str) -> None:
        readers: list[MetricReader] = []
        self._http: Any = None
        self.prometheus_port: int | None = None
        if "prometheus" in config.exporters:
            registry = CollectorRegistry(auto_describe=True)
            readers.append(PrometheusMetricReader(registry=registry))
            host, port = parse_listen(config.prometheus_listen)
            self._http, _thread = start_http_server(port, host, registry)
            self.prometheus_port = int(self._http.server_port)
        interval_ms = config.export_interval_s * 1000
        if "otlp" in config.exporters:
            exporter = OTLPMetricExporter(endpoint=config.otlp_endpoint)
            readers.append(PeriodicExportingMetricReader(exporter, interval_ms))
        if "console" in config.exporters:
            console = ConsoleMetricExporter(out=sys.stderr)
            readers.append(PeriodicExportingMetricReader(console, interval_ms))
        resource = Resource.create(
            {"service.name": "tokend", "service.version": version, **config.resource_attributes}
        )
        self.provider = MeterProvider(resource=resource, metric_readers=readers)
        meter = self.provider.get_meter("tokend", version)
        tokens, cost, sessions = _NAMES[config.metric_names]
        self._tokens = meter.create_counter(tokens, unit="tokens", description="Tokens used")
        self._cost = meter.create_counter(cost, unit="USD", description="Cost of the calls")
        self._sessions = meter.create_counter(sessions, unit="1", description="Sessions started")
        self._compactions = meter.create_counter(
            "tokend.compaction.count", unit="1", description="Compactions"
        )
        self._errors = meter.create_histogram(
            "tokend.prediction.error",
            unit="%",
            description="The gauge's prediction error: (predicted - actual) / actual * 100",
        )

    def record_call(self, call: Call) -> None:
        where = _where(call.session_id, call.workspace_uri)
        usage = call.usage
        for kind, amount in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cacheRead", usage.cache_read_tokens),
            ("cacheCreation", usage.cache_write_tokens),
        ):
            if amount:
                self._tokens.add(amount, {**where, "model": call.model, "type": kind})
        if call.cost_usd:
            self._cost.add(call.cost_usd, {**where, "model": call.model})

    def record_session(self, session_id: str, workspace_uri: str | None) -> None:
        self._sessions.add(1, _where(session_id, workspace_uri))

    def record_compactions(self, session_id: str, workspace_uri: str | None, n: int) -> None:
        self._compactions.add(n, _where(session_id, workspace_uri))

    def record_prediction_error(
        self, session_id: str, workspace_uri: str | None, model: str, error_pct: float
    ) -> None:
        self._errors.record(error_pct, {**_where(session_id, workspace_uri), "model": model})

    def flush(self) -> None:
        self.provider.force_flush()

    def close(self) -> None:
        self.provider.shutdown()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()


def _where(session_id: str, workspace_uri: str | None) -> dict[str, str]:
    return {"session.id": session_id, "workspace": workspace_uri or ""}
