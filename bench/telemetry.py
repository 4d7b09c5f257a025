"""The cost of the usage monitor (spend limits, rate headroom) and of OpenTelemetry on the hot
paths: `session/append` of a provider reply and `context/assemble`, p50 in the service on a
real SQLite file, three ways: no monitor, the monitor (what every daemon runs), the monitor
with telemetry (Prometheus endpoint + OTLP exporter, counters updated on every call).

Rounds alternate between the three set-ups so that machine noise falls on all of them alike.
Goal (issue 11): telemetry on is at most 5% slower than off.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

ROUNDS = 7
CALLS_PER_ROUND = 60
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
    from tokend.core.config import TokendConfig
    from tokend.core.telemetry_settings import TelemetryConfig
    from tokend.service.service import TokendService
    from tokend.service.settings import WorkspaceSettings

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
    return TokendService(store, catalog, config)


def _round(service, sid: str, i: int) -> tuple[list[float], list[float]]:
    from tokend.core.types import TextPart, Usage
    from tokend.service.assembly import AssembleInput, assemble_context

    appends, assembles = [], []
    for n in range(CALLS_PER_ROUND):
        service.append(sid, "user", [TextPart(f"round {i} step {n}: run the tests")])
        usage = Usage(input_tokens=300, output_tokens=40, cache_read_tokens=20_000 + n)
        started = time.perf_counter()
        service.append(sid, "assistant", [TextPart("All green.")], usage=usage)
        appends.append(time.perf_counter() - started)
        started = time.perf_counter()
        assemble_context(service, sid, AssembleInput(system="Be brief."))
        assembles.append(time.perf_counter() - started)
    return appends, assembles


def run() -> str:
    from tokend.service.telemetry import start_telemetry, stop_telemetry
    from tokend.service.usage import usage_of

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
        usage_of(services["monitor"])
        usage_of(services["monitor + telemetry"])
        assert start_telemetry(services["monitor + telemetry"]) is not None
        sids = {s: services[s].create_session(MODEL).id for s in setups}
        for i in range(ROUNDS):
            for setup in setups:
                appends, assembles = _round(services[setup], sids[setup], i)
                times[setup][0].extend(appends)
                times[setup][1].extend(assembles)
        stop_telemetry(services["monitor + telemetry"])
        for service in services.values():
            service.close()
    receiver.shutdown()
    ms = {
        s: (statistics.median(a) * 1e3, statistics.median(b) * 1e3) for s, (a, b) in times.items()
    }
    base = ms["monitor"]
    rows = [
        f"| {s} | {a:.3f} | {b:.3f} | {100 * (a / base[0] - 1):+.1f}% | {100 * (b / base[1] - 1):+.1f}% |"
        for s, (a, b) in ms.items()
    ]
    n = ROUNDS * CALLS_PER_ROUND
    return "\n".join(
        [
            "### telemetry",
            "",
            f"p50 of {n} calls each, {MODEL}, a growing session on SQLite; vs `monitor` (telemetry off).",
            "",
            "| set-up | append p50 ms | assemble p50 ms | append vs off | assemble vs off |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    print(run())
