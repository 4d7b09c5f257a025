"""Telemetry, when `[telemetry] exporters` names one: the OpenTelemetry sink plugged into the
service's UsageMonitor. Without the extra installed tokend runs exactly as before and says
once, in the log, how to enable it (`pip install 'tokend[otel]'`)."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

import tokend
from tokend.service.service import TokendService
from tokend.service.usage import usage_of

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'tokend[otel]'"

_started: weakref.WeakKeyDictionary[TokendService, Any] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def start_telemetry(service: TokendService) -> Any:
    """The service's telemetry sink (started once; None when off or unavailable)."""
    with _lock:
        if service in _started:
            return _started[service]
        _started[service] = sink = _make(service)
        return sink


def _make(service: TokendService) -> Any:
    config = service.config.telemetry
    if not config.enabled:
        return None
    try:
        from tokend.adapters.telemetry import OtelSink
    except ImportError as exc:
        log.warning(
            "[telemetry] exporters = %s, but the OpenTelemetry SDK is not installed (%s): %s",
            list(config.exporters),
            exc.name,
            INSTALL_HINT,
        )
        return None
    try:
        sink = OtelSink(config, tokend.__version__)
    except OSError as exc:  # the Prometheus port is taken, say
        log.warning("telemetry not started: %s", exc)
        return None
    usage_of(service).sinks.append(sink)
    if sink.prometheus_port is not None:
        log.info("telemetry: Prometheus metrics on %s", config.prometheus_listen)
    return sink


def stop_telemetry(service: TokendService) -> None:
    """Flush and stop the service's sink (the last export goes out)."""
    with _lock:
        sink = _started.pop(service, None)
    if sink is not None:
        usage_of(service).sinks.remove(sink)
        sink.close()
