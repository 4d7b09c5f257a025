"""The cost of the usage monitor (spend limits, rate headroom) and of OpenTelemetry on the hot
paths: `session/append` of a provider reply and `context/assemble`, p50 in the service on a
real SQLite file, three ways: no monitor, the monitor (what every daemon runs), the monitor
with telemetry (Prometheus endpoint + OTLP exporter, counters updated on every call).

The set-ups take turns call by call (in a rotating order), so that machine noise falls on all of
them alike; the sessions grow in step. Goal (issue 11): telemetry on is at most 5% slower than off.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from bench.service_shape import append

CALLS = 600  # provider replies per set-up
MODEL = "claude-sonnet-4-5"


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _service(folder: Path, name: str, telemetry: bool, otlp_port: int = 0):
    from tokend.adapters.store import SqlStore
    from tokend.adapters.workspace_settings import WorkspaceSettings
    from tokend.core.settings.tables import TokendConfig
    from tokend.core.telemetry.settings import TelemetryConfig
    from tokend.service.app import build_service

    exporters = ("prometheus", "otlp") if telemetry else ()
    config = TokendConfig(
        telemetry=TelemetryConfig(
            exporters=exporters,
            prometheus_listen="127.0.0.1:0",
            otlp_endpoint=f"http://127.0.0.1:{otlp_port}/v1/metrics",
            export_interval_s=3600,
        )
    )
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{folder}/{name}.sqlite3")
    return build_service(store, catalog, config)


def _step(service, sid: str, n: int, usage_monitor=None) -> tuple[float, float]:
    """One turn: a user message, the provider's reply (timed), an assembly (timed); seconds."""
    from tests.assembling import AssembleInput, assemble_context

    from tokend.core.types import TextPart, Usage

    append(service, sid, "user", [TextPart(f"step {n}: run the tests")])
    usage = Usage(input_tokens=300, output_tokens=40, cache_read_tokens=20_000 + n)
    started = time.perf_counter()
    append(service, sid, "assistant", [TextPart("All green.")], usage=usage)
    appended = time.perf_counter() - started
    started = time.perf_counter()
    assemble_context(service, sid, AssembleInput(system="Be brief."), usage=usage_monitor)
    return appended, time.perf_counter() - started


class _TimedSink:
    """The telemetry sink, timed: seconds spent in it for each provider reply (on the caller's
    thread, the part of its cost that lands on the append)."""

    def __init__(self, sink) -> None:
        self.sink = sink
        self.seconds: list[float] = []

    def record_call(self, call) -> None:
        started = time.perf_counter()
        self.sink.record_call(call)
        self.seconds.append(time.perf_counter() - started)

    def record_prediction_error(self, *args) -> None:
        started = time.perf_counter()
        self.sink.record_prediction_error(*args)
        if self.seconds:
            self.seconds[-1] += time.perf_counter() - started

    def record_session(self, *args) -> None:
        self.sink.record_session(*args)

    def record_compactions(self, *args) -> None:
        self.sink.record_compactions(*args)


def run() -> str:
    from tokend.service.app import assemble_app

    setups = ("no monitor", "monitor", "monitor + telemetry")
    times: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in setups}
    receiver = HTTPServer(("127.0.0.1", 0), _Receiver)  # the OTLP collector
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        services = {
            "no monitor": _service(folder, "a", False),
            "monitor": _service(folder, "b", False),
            "monitor + telemetry": _service(folder, "c", True, receiver.server_port),
        }
        apps = [
            assemble_app(services["monitor"]),
            assemble_app(services["monitor + telemetry"], serving=True),
        ]
        monitors = {"monitor": apps[0].usage, "monitor + telemetry": apps[1].usage}
        sink = apps[1].telemetry
        assert sink is not None
        sinks = apps[1].usage.sinks
        timed = sinks[sinks.index(sink)] = _TimedSink(sink)
        sids = {s: services[s].create_session(MODEL).id for s in setups}
        for n in range(CALLS):
            for k in range(len(setups)):
                setup = setups[(n + k) % len(setups)]
                monitor = monitors.get(setup)
                appended, assembled = _step(services[setup], sids[setup], n, monitor)
                times[setup][0].append(appended)
                times[setup][1].append(assembled)
        sinks[sinks.index(timed)] = sink
        for app in apps:
            app.close()
        services["no monitor"].close()
    receiver.shutdown()
    ms = {
        s: (statistics.median(a) * 1e3, statistics.median(b) * 1e3) for s, (a, b) in times.items()
    }
    base = ms["monitor"]
    sink_us = statistics.median(timed.seconds) * 1e6
    rows = [
        f"| {s} | {a:.3f} | {b:.3f} | {100 * (a / base[0] - 1):+.1f}% | {100 * (b / base[1] - 1):+.1f}% |"
        for s, (a, b) in ms.items()
    ]
    n = CALLS
    return "\n".join(
        [
            "### telemetry",
            "",
            f"p50 of {n} calls each, {MODEL}, a growing session on SQLite; vs `monitor` (telemetry off).",
            "",
            "| set-up | append p50 ms | assemble p50 ms | append vs off | assemble vs off |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Time in the telemetry sink per provider reply (p50): {sink_us:.1f} µs, "
            f"{sink_us / 10 / ms['monitor + telemetry'][0]:.2f}% of the append p50.",
        ]
    )


if __name__ == "__main__":
    print(run())
