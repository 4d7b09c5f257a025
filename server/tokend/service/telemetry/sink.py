"""Telemetry, when `[telemetry] exporters` names one: the OpenTelemetry sink plugged into the
app's UsageMonitor (service/app.py starts it for a serving app). Without the extra installed
tokend runs exactly as before and says once, in the log, how to enable it
(`pip install 'tokend[otel]'`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import tokend
from tokend.core.telemetry.settings import TelemetryConfig
from tokend.service.usage.monitor import UsageMonitor

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'tokend[otel]'"


SinkFactory = Callable[[TelemetryConfig, str], Any]
"""Opens the sink of a config for a tokend version (the composition root's: adapters.telemetry's
OtelSink); ImportError without the SDK, OSError when it cannot listen."""


def start_telemetry(config: TelemetryConfig, usage: UsageMonitor, open_sink: SinkFactory) -> Any:
    """The telemetry sink, listening to `usage` (None when off or unavailable)."""
    if not config.enabled:
        return None
    try:
        sink = open_sink(config, tokend.__version__)
    except ImportError as exc:
        log.warning(
            "[telemetry] exporters = %s, but the OpenTelemetry SDK is not installed (%s): %s",
            list(config.exporters),
            exc.name,
            INSTALL_HINT,
        )
        return None
    except OSError as exc:  # the Prometheus port is taken, say
        log.warning("telemetry not started: %s", exc)
        return None
    usage.sinks.append(sink)
    if sink.prometheus_port is not None:
        log.info("telemetry: Prometheus metrics on %s", config.prometheus_listen)
    return sink


def stop_telemetry(sink: Any, usage: UsageMonitor) -> None:
    """Flush and stop `sink` (the last export goes out); None is no sink."""
    if sink is not None:
        usage.sinks.remove(sink)
        sink.close()
