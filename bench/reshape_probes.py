"""The per-tree probes of bench/reshape.py: each runs one section's scenario on one tree (its
server folder on PYTHONPATH, in its own processes) and returns that round's figures by name.

Where the old tree lacks an API the section's own bench calls in-process (the store, the
service), the probe drives the real daemon over its socket instead: the path a user takes.
Every probe reuses the section's own driver where it has one taking a server folder
(stall, stall_assemble, statusline, repomap_focus; app_root and config in bench/reshape_procs.py).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import repomap_focus, stall, stall_assemble, statusline_parts
from bench.daemon import (
    _env,
    _fanout_ms,
    _load_session,
    _messages,
    _new_connections_ms,
    _p,
    _Processes,
    _rss_mib,
    _unix_client,
)
from bench.workspace import _chat_tokens, _drain, _wait_save

MODEL = "gpt-4o"
QUICK = os.environ.get("BENCH_RESHAPE_QUICK") == "1"
SERVICE_MESSAGES = 300 if QUICK else 1000
SNAPSHOTS = 200 if QUICK else 500
ASSEMBLES = 10 if QUICK else 20
LISTED_SESSIONS = 300 if QUICK else 1000
SAVES = 10 if QUICK else 30
FOCUSES = 4 if QUICK else 10

Figures = dict[str, float]


@contextmanager
def daemon(server: Path) -> Iterator[tuple[_Processes, Path, Any]]:
    """A fresh `tokend serve` of `server` on a private temp dir: (its processes, its socket,
    the daemon's Popen)."""
    base = Path(tempfile.mkdtemp(prefix="tkrs-"))  # short: unix socket paths max ~104 bytes
    procs = _Processes(base, {**_env(base), "PYTHONPATH": str(server)})
    sock = base / "run" / "tokend" / "daemon.sock"
    try:
        yield procs, sock, procs.daemon(sock)
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def _timed_ms(call: Any, times: int) -> list[float]:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def service(server: Path, shared: dict[str, Any]) -> Figures:
    """Appends, snapshot and assemble on one session; then a new daemon's first snapshot of it
    (the session loaded from the store: the cold load)."""
    with daemon(server) as (procs, sock, _):
        client = _unix_client(sock, "service")
        sid = client.request("session/create", {"model": MODEL})["sessionId"]
        appends = []
        for message in _messages(7, SERVICE_MESSAGES):
            params = {"sessionId": sid, "message": message}
            appends += _timed_ms(lambda p=params: client.request("session/append", p), 1)
        snap = {"sessionId": sid}
        snapshots = _timed_ms(lambda: client.request("budget/snapshot", snap), SNAPSHOTS)
        asm = {"sessionId": sid, "format": "openai"}
        assembles = _timed_ms(lambda: client.request("context/assemble", asm), ASSEMBLES)
        client.close()
        procs.stop_all()
        procs.daemon(sock)
        again = _unix_client(sock, "cold")
        cold = _timed_ms(lambda: again.request("budget/snapshot", snap), 1)[0]
        again.close()
    return {
        f"`session/append`, {SERVICE_MESSAGES} in a row: p50 ms": _p(appends, 50),
        "`session/append`: p99 ms": _p(appends, 99),
        f"`budget/snapshot` ({SERVICE_MESSAGES} messages): p50 ms": _p(snapshots, 50),
        f"`context/assemble` ({SERVICE_MESSAGES} messages): p50 ms": _p(assembles, 50),
        "cold load: a new daemon's first `budget/snapshot`: ms": cold,
    }


def daemon_figures(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/daemon's round trips (unix socket, the `tokend lsp` forwarder), fan-out to 8
    attached clients, new connections, and the daemon's memory idle and with 5 sessions."""
    with daemon(server) as (procs, sock, proc):
        time.sleep(0.5)
        idle = _rss_mib(proc.pid)
        clients = [_unix_client(sock, f"editor-{n}") for n in range(5)]
        sessions = [_load_session(c, seed=n)[0] for n, c in enumerate(clients)]
        time.sleep(0.5)
        loaded = _rss_mib(proc.pid)
        forwarder = procs.stdio_client("lsp")
        unix_ms, forward_ms = [], []
        snap = {"sessionId": sessions[0]}
        for _ in range(2):  # interleaved blocks
            unix_ms += _timed_ms(lambda: clients[0].request("budget/snapshot", snap), SNAPSHOTS)
            forward_ms += _timed_ms(lambda: forwarder.request("budget/snapshot", snap), SNAPSHOTS)
        each, last, reply = _fanout_ms(sock)
        new = _new_connections_ms(sock)
        for client in [*clients, forwarder]:
            client.close()
    return {
        "`budget/snapshot`, unix socket: p50 ms": _p(unix_ms, 50),
        "`budget/snapshot`, through the `tokend lsp` forwarder: p50 ms": _p(forward_ms, 50),
        "fan-out: append -> each of 8 attached clients: p50 ms": _p(each, 50),
        "fan-out: each of 8: p99 ms": _p(each, 99),
        "fan-out: the appender's reply: p50 ms": _p(reply, 50),
        "new connection (connect + `initialize`): p50 ms": _p(new, 50),
        "daemon RSS, ready: MiB": idle,
        "daemon RSS, 5 sessions x 200 messages: MiB": loaded,
    }


def stall_figures(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/stall's round: snapshots on one connection while another appends 30 MB."""
    got = stall._one_round(server, shared["big"])
    return {
        "idle `budget/snapshot`: p50 ms": statistics.median(got["idle"]),
        "`budget/snapshot` during a 30 MB append: p99 ms": stall._percentile(got["stalled"], 0.99),
        "the 30 MB append took: s": got["append_s"],
        "daemon RSS growth after it: MiB": got["rss_after"] - got["rss_before"],
    }


def stall_assemble_figures(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/stall_assemble's round on SQLAlchemy's sdist."""
    got = stall_assemble._one_round(server, shared["sqlalchemy"])
    return {
        "first map: `budget/snapshot` p99 ms": stall_assemble._percentile(got["first"], 0.99),
        "first map: the assemble took s": got["first_s"],
        "a new focus: `budget/snapshot` p99 ms": stall_assemble._percentile(got["stalled"], 0.99),
        "a new focus: the assemble took (median) s": statistics.median(got["took"]),
        "until the first assemble carried the map: s": got["indexed_s"],
    }


def statusline_figures(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/statusline's warm calls (a daemon follows the transcript), `tokend status`
    through that daemon, one cold new transcript, and the follower's latency."""
    statusline_parts.WARM_CALLS = 8 if QUICK else 15
    statusline_parts.LATENCY_CALLS = 5 if QUICK else 10
    tree = statusline_parts._Tree("reshape", server)
    try:
        got = statusline_parts._measure(tree, 2)
    finally:
        tree.stop()
        tree.cleanup()
    return {
        "warm `tokend statusline` (entry point): ms": statistics.median(got["entry"]),
        "warm `python -m tokend statusline`: ms": statistics.median(got["warm"]),
        "`tokend status` through the daemon: ms": statistics.median(got["status"]),
        "`tokend status --json` through the daemon: ms": statistics.median(got["status_json"]),
        "the floor (`python -S -c pass`) between them: ms": statistics.median(got["floor"]),
        "follow latency: last record -> `budget/didChange`: ms": statistics.median(got["latency"]),
    }


def workspace(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/workspace's scenario on a copy of SQLAlchemy's sdist: a chat file saved SAVES
    times, ms from the write until both clients have both notifications."""
    with daemon(server) as (procs, sock, _):
        tree = procs.base / "ws"
        shutil.copytree(shared["sqlalchemy"], tree)
        chat = "lib/sqlalchemy/engine/base.py"
        a, b = _unix_client(sock, "editor-a"), _unix_client(sock, "agent-b")
        uri = tree.as_uri()
        sid = a.request("session/create", {"model": MODEL, "workspaceUri": uri})["sessionId"]
        a.request("files/add", {"sessionId": sid, "paths": [chat]})
        b.request("session/attach", {"sessionId": sid})
        for client in (a, b):
            client.request("workspace/fileTokens", {"workspaceUri": uri, "paths": [chat]})
        for client in (a, b):
            _drain(client, 1.0)
        before = [
            _chat_tokens({"params": {"snapshot": c.request("budget/snapshot", {"sessionId": sid})}})
            for c in (a, b)
        ]
        target, last = tree / chat, []
        original = target.read_text()
        import bench.workspace as ws

        ws.CHAT_FILE = chat
        for n in range(SAVES + 2):
            started = time.perf_counter()
            target.write_text(original + "".join(f"\n# save {k}\n" for k in range(n + 1)))
            got = _wait_save([a, b], started, before)
            if n >= 2:
                last.append(max(max(g.values()) for g in got))
            time.sleep(0.4)
        a.close()
        b.close()
    return {
        f"a save -> both notifications at both clients ({SAVES} saves): p50 ms": _p(last, 50),
        "a save -> both at both: max ms": max(last),
    }


def focus(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/repomap_focus's daemon on SQLAlchemy's sdist: the first `repoMap/get`, the same
    map again, FOCUSES new file focuses (each asked for the first time)."""
    got = repomap_focus._one_daemon(server, shared["sqlalchemy"], shared["focus_files"], [])
    return {
        "first `repoMap/get` (waits for the tags): s": got["first_s"],
        "the same map again: ms": statistics.median(got["again"]) * 1000,
        f"a new file focus ({len(got['focus'])}): p50 ms": statistics.median(got["focus"]) * 1000,
        "a new file focus: max ms": max(got["focus"]) * 1000,
    }
