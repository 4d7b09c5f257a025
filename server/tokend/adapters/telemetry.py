"""OpenTelemetry metrics (the optional extra `tokend[otel]`): a UsageSink over the SDK.

Instruments (tokend's names; with `metric_names = "claude_code"` the token and cost counters
and the session count take Claude Code's, so its dashboards work unchanged):

| tokend                     | claude_code                | unit   | attributes                          |
|----------------------------|----------------------------|--------|-------------------------------------|
| tokend.token.usage         | claude_code.token.usage    | tokens | model, type, session.id, workspace  |
| tokend.cost.usage          | claude_code.cost.usage     | USD    | model, session.id, workspace        |
| tokend.session.count       | claude_code.session.count  | 1      | session.id, workspace               |
| tokend.compaction.count    | (same)                     | 1      | session.id, workspace               |
| tokend.prediction.error    | (same)                     | %      | model, direction, session.id, workspace |

`type` is input, output, cacheRead or cacheCreation. The prediction error is recorded as
|error| with `direction` over or under (an OpenTelemetry histogram takes no negative value: a
signed one lost every underestimate). Exporters: a Prometheus endpoint on
loopback (its own registry, its own HTTP server thread), OTLP over HTTP, and the console
(stderr: stdout is the JSON-RPC wire). Importing this module needs the SDK installed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, start_http_server

from tokend.core.telemetry.settings import TelemetryConfig, parse_listen
from tokend.core.usage.stats import Call

_ATTRIBUTES = ("session.id", "workspace", "model", "type")  # a key's values, in this order
_NAMES = {
    "tokend": ("tokend.token.usage", "tokend.cost.usage", "tokend.session.count"),
    "claude_code": (
        "claude_code.token.usage",
        "claude_code.cost.usage",
        "claude_code.session.count",
    ),
}


class OtelSink:
    """Counts calls, sessions, compactions and the gauge's prediction error.

    The recording methods run on the daemon's hot path (every append of a provider reply), so
    they only add to running totals in plain dicts, keyed by attribute values. The counters are
    observable: the SDK reads the totals when a reader collects (a Prometheus scrape, an OTLP
    or console export: their own threads). Prediction errors wait in a list until then and are
    recorded into the histogram by the first callback of that collection (the SDK runs every
    callback before it reads its storages). Attribute sets are built once per key."""

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
        self._lock = threading.Lock()
        # (session.id, workspace[, model[, type]]) -> running total
        self._token_totals: dict[tuple[str, ...], int] = {}
        self._cost_totals: dict[tuple[str, ...], float] = {}
        self._session_totals: dict[tuple[str, ...], int] = {}
        self._compaction_totals: dict[tuple[str, ...], int] = {}
        self._pending_errors: list[tuple[tuple[str, ...], float]] = []
        self._attributes: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, str]] = {}
        self.provider = MeterProvider(resource=resource, metric_readers=readers)
        meter = self.provider.get_meter("tokend", version)
        tokens, cost, sessions = _NAMES[config.metric_names]
        self._errors = meter.create_histogram(
            "tokend.prediction.error",
            unit="%",
            description="The gauge's prediction error, |predicted - actual| / actual * 100; "
            "direction: over (predicted more than the call took) or under",
        )
        meter.create_observable_counter(
            tokens,
            [self._observer(self._token_totals, drain=True)],
            unit="tokens",
            description="Tokens used",
        )
        meter.create_observable_counter(
            cost, [self._observer(self._cost_totals)], unit="USD", description="Cost of the calls"
        )
        meter.create_observable_counter(
            sessions,
            [self._observer(self._session_totals)],
            unit="1",
            description="Sessions started",
        )
        meter.create_observable_counter(
            "tokend.compaction.count",
            [self._observer(self._compaction_totals)],
            unit="1",
            description="Compactions",
        )

    # -- the hot path: running totals only -------------------------------------------------

    def record_call(self, call: Call) -> None:
        usage = call.usage
        where = (call.session_id, call.workspace_uri or "", call.model)
        tokens = self._token_totals
        with self._lock:
            for kind, amount in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
                ("cacheRead", usage.cache_read_tokens),
                ("cacheCreation", usage.cache_write_tokens),
            ):
                if amount:
                    key = (*where, kind)
                    tokens[key] = tokens.get(key, 0) + amount
            if call.cost_usd:
                self._cost_totals[where] = self._cost_totals.get(where, 0.0) + call.cost_usd

    def record_session(self, session_id: str, workspace_uri: str | None) -> None:
        key = (session_id, workspace_uri or "")
        with self._lock:
            self._session_totals[key] = self._session_totals.get(key, 0) + 1

    def record_compactions(self, session_id: str, workspace_uri: str | None, n: int) -> None:
        key = (session_id, workspace_uri or "")
        with self._lock:
            self._compaction_totals[key] = self._compaction_totals.get(key, 0) + n

    def record_prediction_error(
        self, session_id: str, workspace_uri: str | None, model: str, error_pct: float
    ) -> None:
        with self._lock:
            direction = "over" if error_pct > 0 else "under"
            key = (session_id, workspace_uri or "", model, direction)
            self._pending_errors.append((key, abs(error_pct)))
            full = len(self._pending_errors) >= MAX_PENDING_ERRORS
        if full:  # no reader has collected for a long while: record them here, once
            self._record_errors()

    # -- collection (a reader's thread) ----------------------------------------------------

    def _observer(
        self, totals: dict[tuple[str, ...], Any], *, drain: bool = False
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            if drain:
                self._record_errors()
            with self._lock:
                items = list(totals.items())
            return [Observation(value, self._attributes_of(key)) for key, value in items]

        return observe

    def _record_errors(self) -> None:
        with self._lock:
            errors, self._pending_errors = self._pending_errors, []
        for key, error_pct in errors:
            self._errors.record(error_pct, self._attributes_of(key, _ERROR_ATTRIBUTES))

    def _attributes_of(
        self, key: tuple[str, ...], names: tuple[str, ...] = _ATTRIBUTES
    ) -> dict[str, str]:
        with self._lock:
            found = self._attributes.get((names, key))
            if found is None:
                found = self._attributes[names, key] = dict(zip(names, key, strict=False))
            return found

    def flush(self) -> None:
        self.provider.force_flush()

    def close(self) -> None:
        self.provider.shutdown()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()


_ERROR_ATTRIBUTES = ("session.id", "workspace", "model", "direction")
MAX_PENDING_ERRORS = 1_000  # prediction errors kept for the next collection, at most
