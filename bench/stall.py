"""Nobody waits behind another connection's work: `budget/snapshot` latency on one connection
while another connection appends a 30 MB tool result, or 10 MB of short strings (a tool call's
input), on the real `tokend serve`.

Measured in one run, on this checkout and on the baseline revision (the main before session
state moved to one owner per session, where every append ran on the event loop), each a real
daemon on a private temp dir:
  idle      snapshot round trips with nothing else going on
  stalled   snapshot round trips sent back to back while the big append is in flight: from
            its first byte (written by a second thread, so the daemon's reading and parsing
            of the body are measured too) to its reply
plus how long the append took (gpt-4o refuses it as too large after counting it: the case the
review measured) and the daemon's RSS before and after.

The assemble case (a repo map built while another connection asks for snapshots) is in
bench/stall_assemble.py; this section prints both. `python -m bench.stall` prints the section.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.baseline import BASELINE_REV, ROOT, baseline_tree
from bench.daemon import _Processes, _rss_mib, _unix_client
from bench.stall_assemble import run as run_assemble

BIG_BYTES = 30 * 1024 * 1024
IDLE_ROUND_TRIPS = 500
ROUNDS = int(os.environ.get("BENCH_STALL_ROUNDS", "3"))


def _big_output() -> str:
    line = "src/module_{:05d}.c:120:7: warning: unused variable 'tmp' [-Wunused-variable]\n"
    out, size, i = [], 0, 0
    while size < BIG_BYTES:
        text = line.format(i)
        out.append(text)
        size += len(text)
        i += 1
    return "".join(out)


def _short_strings() -> list[str]:
    """The paths a glob over a big tree returns: some 10 MB of short strings."""
    return [f"src/pkg_{i % 97:02d}/sub_{i % 13}/module_{i:06d}.py" for i in range(270_000)]


def _big_messages() -> dict[str, dict[str, Any]]:
    """The big append of each kind: (its `message`)."""
    result = {"type": "toolResult", "callId": "c1", "name": "bash", "output": _big_output()}
    glob = {
        "type": "toolCall",
        "callId": "g1",
        "name": "Glob",
        "input": {"files": _short_strings()},
    }
    return {
        "30 MB tool result": {"role": "tool", "parts": [result]},
        "10 MB of short strings (a tool call's input)": {"role": "assistant", "parts": [glob]},
    }


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered)) - 1))]


def _one_round(server_dir: Path, big: dict[str, Any]) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tokend-stall-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(server_dir),
        "XDG_RUNTIME_DIR": str(base / "run"),
        "XDG_DATA_HOME": str(base / "data"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_CACHE_HOME": str(base / "cache"),
        "TOKEND_DATABASE_URL": f"sqlite:///{base}/tokend.sqlite3",
    }
    (base / "run").mkdir(mode=0o700)
    procs = _Processes(base, env)
    try:
        sock = base / "run" / "tokend.sock"
        daemon = procs.daemon(sock)
        reader, writer = _unix_client(sock, "reader"), _unix_client(sock, "writer")
        watched = reader.request("session/create", {"model": "gpt-4o"})["sessionId"]
        reader.request(
            "session/append",
            {
                "sessionId": watched,
                "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
            },
        )
        target = writer.request("session/create", {"model": "gpt-4o"})["sessionId"]
        call = {"type": "toolCall", "callId": "c1", "name": "bash", "input": {"cmd": "make"}}
        writer.request(
            "session/append",
            {"sessionId": target, "message": {"role": "assistant", "parts": [call]}},
        )
        idle = []
        for _ in range(IDLE_ROUND_TRIPS):
            started = time.perf_counter()
            reader.request("budget/snapshot", {"sessionId": watched})
            idle.append((time.perf_counter() - started) * 1000)
        rss_before = _rss_mib(daemon.pid)
        frame = _frame(writer.next_id + 1, "session/append", {"sessionId": target, "message": big})
        writer.next_id += 1
        answered = threading.Event()
        sent: list[float] = []

        def append() -> None:
            # Bytes only (encoded beforehand): os.write and os.read let the reader's thread run.
            view = memoryview(frame)
            while view:
                view = view[os.write(writer.write_fd, view) :]
            sent.append(time.perf_counter())
            while not _answered(writer, writer.next_id):
                select.select([writer.read_fd], [], [], 1.0)
            answered.set()

        thread = threading.Thread(target=append, daemon=True)
        started_append = time.perf_counter()
        thread.start()
        samples: list[tuple[float, float]] = []
        while not answered.is_set():
            started = time.perf_counter()
            reader.request("budget/snapshot", {"sessionId": watched})
            samples.append((started, (time.perf_counter() - started) * 1000))
        append_s = time.perf_counter() - started_append
        thread.join()
        stalled = [ms for _, ms in samples]
        reading = [ms for at, ms in samples if at < sent[0]]
        time.sleep(1.0)
        rss_after = _rss_mib(daemon.pid)
        reader.close()
        writer.close()
        return {
            "idle": idle,
            "stalled": stalled,
            "reading": reading,
            "append_s": append_s,
            "rss_before": rss_before,
            "rss_after": rss_after,
        }
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def _frame(request_id: int, method: str, params: Any) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    return b"Content-Length: %d\r\n\r\n%s" % (len(body.encode()), body.encode())


def _answered(client: Any, request_id: int) -> bool:
    """True once the reply to `request_id` (result or error) has arrived."""
    while select.select([client.read_fd], [], [], 0)[0]:
        chunk = os.read(client.read_fd, 1 << 20)
        if not chunk:
            raise EOFError("the daemon closed the writer's connection")
        client.buffer += chunk
    marker = b'"id": %d' % request_id
    compact = b'"id":%d' % request_id
    return marker in client.buffer or compact in client.buffer


def _summary(rounds: list[dict[str, Any]]) -> dict[str, float]:
    idle = [v for r in rounds for v in r["idle"]]
    stalled = [v for r in rounds for v in r["stalled"]]
    reading = [v for r in rounds for v in r["reading"]] or [float("nan")]
    return {
        "reading_n": len(reading),
        "reading_p99": _percentile(reading, 0.99),
        "reading_max": max(reading),
        "idle_p50": statistics.median(idle),
        "idle_p99": _percentile(idle, 0.99),
        "n": len(stalled),
        "p50": statistics.median(stalled),
        "p99": _percentile(stalled, 0.99),
        "max": max(stalled),
        "append_s": statistics.median(r["append_s"] for r in rounds),
        "rss_growth": statistics.median(r["rss_after"] - r["rss_before"] for r in rounds),
    }


def run() -> str:
    bigs = _big_messages()
    ours = {
        kind: _summary([_one_round(ROOT / "server", big) for _ in range(ROUNDS)])
        for kind, big in bigs.items()
    }
    base: dict[str, dict[str, float]] = {}
    with baseline_tree() as baseline_dir:
        if baseline_dir is not None:
            base = {
                kind: _summary([_one_round(baseline_dir / "server", big) for _ in range(ROUNDS)])
                for kind, big in bigs.items()
            }
    lines = [
        "### Nobody waits behind a big append (bench/stall.py)\n",
        f"One connection appends a {BIG_BYTES >> 20} MB tool result to a gpt-4o session (tokend's",
        "tool-output gate stores it whole and counts a 2 KB preview; the baseline counts all of it and",
        "refuses it as too large), or a tool call whose input is 270,000 short strings (10 MB: counted,",
        "and refused as over the window); another sends `budget/snapshot` back to back meanwhile, from",
        "the append's first byte (sent by a second thread) to its reply. Milliseconds;",
        f"{ROUNDS} rounds pooled; baseline = main at {BASELINE_REV} (all work on the event loop).\n",
        "| append | daemon | snapshot idle p50 / p99 | snapshots during the append | p50 | p99 | max | append took | RSS after - before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for kind in bigs:
        for name, s in (("tokend", ours[kind]), (f"baseline {BASELINE_REV}", base.get(kind))):
            if s is None:
                lines.append(f"| {kind} | {name} | (baseline revision not available) |||||||")
                continue
            lines.append(
                f"| {kind} | {name} | {s['idle_p50']:.2f} / {s['idle_p99']:.2f} | {s['n']} | "
                f"{s['p50']:.2f} | {s['p99']:.2f} | {s['max']:.1f} | {s['append_s']:.2f} s | "
                f"{s['rss_growth']:+.0f} MiB |"
            )
    lines.append("")
    for kind, s in ours.items():
        line = (
            f"{kind}: p99 during the append {s['p99']:.2f} ms (goal <= 5 ms"
            f"{'' if s['p99'] <= 5 else ': **missed**'}); while the daemon was still reading "
            f"and parsing the body (until its last byte was written) {s['reading_n']} "
            f"snapshots, p99 {s['reading_p99']:.2f} ms, max {s['reading_max']:.1f} ms"
        )
        if kind in base:
            line += f"; baseline p99 {base[kind]['p99']:.1f} ms"
        lines.append(line + ".")
    return "\n".join(lines) + "\n\n" + run_assemble()


if __name__ == "__main__":
    print(run())
