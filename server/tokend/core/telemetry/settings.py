"""`[telemetry]`: OpenTelemetry metrics, off unless an exporter is named. Pure settings.

    [telemetry]
    exporters = ["prometheus", "otlp", "console"]   # any of them; [] (default): off
    prometheus_listen = "127.0.0.1:9464"            # loopback only
    otlp_endpoint = "http://127.0.0.1:4318/v1/metrics"
    export_interval_s = 60                           # OTLP and console push interval
    metric_names = "tokend"                          # or "claude_code": claude_code.token.usage…
    resource_attributes = { team = "infra", department = "eng" }

Needs the optional extra: `pip install 'tokend[otel]'`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from tokend.core.config_rules import Check

Exporter = Literal["prometheus", "otlp", "console"]
MetricNames = Literal["tokend", "claude_code"]


def parse_listen(value: str) -> tuple[str, int]:
    """ "HOST:PORT" (IPv6 as "[::1]:PORT") -> (host, port); ValueError unless loopback."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT")
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{host} is not a loopback address")
    return host, int(port)


def _listen_ok(value: Any) -> bool:
    try:
        parse_listen(value)
    except (ValueError, TypeError, AttributeError):
        return False
    return True


_LISTEN = Check(_listen_ok, 'a loopback "HOST:PORT", e.g. "127.0.0.1:9464"')
_HTTP_URL = Check(lambda v: v.startswith(("http://", "https://")), "an http(s) URL")
_SECONDS = Check(lambda v: v > 0, "a number of seconds > 0")


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    exporters: tuple[Exporter, ...] = ()
    prometheus_listen: Annotated[str, _LISTEN] = "127.0.0.1:9464"
    otlp_endpoint: Annotated[str, _HTTP_URL] = "http://127.0.0.1:4318/v1/metrics"
    export_interval_s: Annotated[float, _SECONDS] = 60.0
    metric_names: MetricNames = "tokend"
    resource_attributes: dict[str, str] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return bool(self.exporters)
