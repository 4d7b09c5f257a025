"""`context/assemble` on a long session through the real daemon (issue 22, the assemble goals:
<= 20 ms p50 at 10,000 live messages warm, <= 300 ms cold after a restart, off the event loop).

Each tree runs in its own `tokend serve` (PYTHONPATH=<tree>/server) on a private unix socket
and SQLite file (or, with TOKEND_ASSEMBLE_ENGINE=postgresql, a database of its own on the
suite's PostgreSQL server), talked to as an editor does; this tree beside the main this work branched
from (TIP_REV), in the same run. A session
of short turns (bench/scale_session.short_turns: 20 to 60 words, usage on every assistant
reply) is appended to each size (16 in flight), then `context/assemble` (openai format, a
system prompt) is sent 20 times warm. Three figures per call:

- round trip: the request sent to the reply parsed by the bench's client (the figure
  scale_session gives: its client joins the frame's bytes and json.loads them, ~2.6 MB at
  10,000 messages, which costs it tens of ms on this machine);
- frame: the request sent to the reply's last byte read (a linear reader; nothing parsed):
  what the daemon takes, the socket included;
- parse: json.loads of that frame in the bench (the client's own cost, shown apart).

Then the daemon is stopped (SIGTERM) and started again on the same store, and the first
`context/assemble` is timed (round trip): the session is read lazily, its bodies on that first
assemble (and, on main, the tokenizer (o200k) loaded for the system prompt's count). Meanwhile
a second connection asks `budget/snapshot` of the same session in a loop: the event loop must
answer it while the assemble reads and renders. The replies before and after the restart are
compared (the same result). Then another restart, a 2-message session's assemble first, and
the long session's first assemble: the session's own cold cost.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.append_order import Daemon
from bench.baseline import ROOT, baseline_tree
from bench.scale_session import MODEL, WINDOW, _cpu_s, _restart, pipelined, short_turns

TIP_REV = "c84769f"  # main as this stop's work (cold4) branched from it
# TOKEND_ASSEMBLE_ENGINE=postgresql runs both daemons on a database each of the suite's own
# PostgreSQL server (tests/pg.py) instead of their SQLite files.
ENGINE = os.environ.get("TOKEND_ASSEMBLE_ENGINE", "sqlite")
SIZES = (5_000, 10_000)
CALLS = 20
BESIDE_EVERY_S = 0.02  # the other connection's pace while a cold assemble runs


def _frame(client: Any, params: dict[str, Any]) -> tuple[float, float, bytes]:
    """(ms to the reply's last byte, ms to parse it, its body): read with a linear buffer."""
    began = time.perf_counter()
    request_id = client.start_request("context/assemble", params)
    buffer = bytearray(client.buffer)
    client.buffer = bytearray()
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            length = int(bytes(buffer[:end]).lower().split(b"content-length:")[1].split(b"\r")[0])
            if len(buffer) >= end + 4 + length:
                body = bytes(buffer[end + 4 : end + 4 + length])
                del buffer[: end + 4 + length]
                got = time.perf_counter()
                message = json.loads(body)
                parsed = time.perf_counter()
                if message.get("id") == request_id:
                    client.buffer = buffer
                    if "error" in message:
                        raise RuntimeError(f"tokend answered an error: {message['error']}")
                    return (got - began) * 1000, (parsed - got) * 1000, body
                continue
        if not select.select([client.read_fd], [], [], 120)[0]:
            raise TimeoutError("no reply in 120 s")
        chunk = os.read(client.read_fd, 1 << 20)
        if not chunk:
            raise EOFError("the daemon closed the connection")
        buffer += chunk


def _round_trip(client: Any, params: dict[str, Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = client.request("context/assemble", params)
    return (time.perf_counter() - began) * 1000, result


def _cold_beside(
    client: Any, editor: Any, params: dict[str, Any]
) -> tuple[float, Any, list[float]]:
    """The first `context/assemble` after a restart (ms, its result) and, while it runs, the
    round trips of another connection's `budget/snapshot` of the same session (ms each), one
    every BESIDE_EVERY_S: each one but the last was answered before the assemble's reply
    began."""
    began = time.perf_counter()
    request_id = client.start_request("context/assemble", params)
    beside: list[float] = []
    while not select.select([client.read_fd], [], [], BESIDE_EVERY_S)[0]:
        beside.append(_timed_snapshot(editor, params["sessionId"]))
    while True:
        reply = client.read()
        if reply.get("id") == request_id:
            break
    took = (time.perf_counter() - began) * 1000
    if "error" in reply:
        raise RuntimeError(f"tokend answered an error: {reply['error']}")
    return took, reply["result"], beside


def _timed_snapshot(client: Any, session_id: str) -> float:
    began = time.perf_counter()
    client.request("budget/snapshot", {"sessionId": session_id})
    return (time.perf_counter() - began) * 1000


def measure(tree: Path, sizes: tuple[int, ...], database: str | None = None) -> dict[str, Any]:
    daemon = Daemon(tree)
    out: dict[str, Any] = {"warm": {}, "errors": 0}
    try:
        if database is not None:
            daemon.processes.env["TOKEND_DATABASE_URL"] = database
            _restart(daemon)
        client = daemon.client("assemble")
        created = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        sid = created["sessionId"]
        params = {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."}
        turns, done = short_turns(sizes[-1]), 0
        for size in sizes:
            out["errors"] += pipelined(client, sid, turns[done:size])[1]
            done = size
            client.request("context/assemble", params)  # warm, as a live session is
            cpu = _cpu_s(daemon.processes.started[-1].pid)
            trips = [_round_trip(client, params)[0] for _ in range(CALLS)]
            cpu_ms = (_cpu_s(daemon.processes.started[-1].pid) - cpu) * 1000 / CALLS
            frames = [_frame(client, params) for _ in range(CALLS)]
            out["warm"][size] = {
                "round_trip": statistics.median(trips),
                "frame": statistics.median(f[0] for f in frames),
                "parse": statistics.median(f[1] for f in frames),
                "mb": len(frames[-1][2]) / 1e6,
                "cpu_ms": cpu_ms,
            }
        before = _round_trip(client, params)[1]
        other = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        other_params = {**params, "sessionId": other["sessionId"]}
        pipelined(client, other["sessionId"], short_turns(2))
        client.close()
        _restart(daemon)
        client, other_client = daemon.client("assemble"), daemon.client("editor")
        out["cold_ms"], after, out["beside"] = _cold_beside(client, other_client, params)
        other_client.close()
        out["same_after_restart"] = after == before
        out["cold_at"] = sizes[-1]
        client.close()
        _restart(daemon)  # again: another session's assemble first loads the tokenizer
        client = daemon.client("assemble")
        out["tokenizer_ms"] = _round_trip(client, other_params)[0]
        out["cold_session_ms"] = _round_trip(client, params)[0]
        client.close()
    finally:
        daemon.stop()
    return out


def run() -> str:
    results: dict[str, dict[str, Any]] = {}
    with baseline_tree(TIP_REV) as tip, _databases() as database:
        results["this tree"] = measure(ROOT, SIZES, database("assemble_a"))
        if tip is not None:
            results[f"main at {TIP_REV}"] = measure(tip, SIZES, database("assemble_b"))
    return _section(results)


@contextlib.contextmanager
def _databases() -> Iterator[Callable[[str], str | None]]:
    """A new database's URL for each name on PostgreSQL (ENGINE), else None (SQLite files)."""
    if ENGINE != "postgresql":
        yield lambda _name: None
        return
    from tests.pg import PostgresServer  # the suite's own server (the pgserver wheel)

    server = PostgresServer().start()
    try:
        yield server.new_database
    finally:
        server.stop()


_ENGINES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def _section(results: dict[str, dict[str, Any]]) -> str:
    on = "" if ENGINE == "sqlite" else f" on {_ENGINES[ENGINE]}"
    lines = [
        f"### context/assemble on a long session{on} (bench/scale_assemble.py)\n",
        f"A real `tokend serve` per tree, {_ENGINES[ENGINE]}; a session of short turns (20 to 60 words, usage "
        "on every reply) appended to each size, then `context/assemble` (openai, a system "
        f"prompt) {CALLS} times warm: p50 of the round trip (the bench's client parses the "
        "reply), of the time to the reply's last byte (read, not parsed) and of the client's "
        "parse alone, and the daemon's CPU per round trip (/proc: less sensitive to the load "
        "than the times). Then a restart and the first `context/assemble`; another restart, a "
        "2-message session's assemble (it loads the tokenizer), then the long session's first. "
        "While the first assemble after a restart runs, another connection asks "
        "`budget/snapshot` of the same session every 20 ms: how many were answered before "
        "the assemble's reply began, and the longest of them. Beside the main this work branched "
        f"from ({TIP_REV}), same run.\n",
        "| daemon | messages | reply | round trip p50 | to the last byte p50 | client's parse p50 "
        "| the daemon's CPU per call |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, got in results.items():
        for size, warm in got["warm"].items():
            lines.append(
                f"| {name} | {size:,} | {warm['mb']:.1f} MB | {warm['round_trip']:.1f} ms | "
                f"{warm['frame']:.1f} ms | {warm['parse']:.1f} ms | {warm['cpu_ms']:.1f} ms |"
            )
    lines += [
        "",
        "| daemon | first `context/assemble` after a restart | the same reply as before it | "
        "another restart: a 2-message session's assemble first (the tokenizer loaded) | then "
        "the first assemble of the long session | snapshots answered meanwhile (longest) | "
        "errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, got in results.items():
        beside = got["beside"][:-1]  # the last one ended after the assemble's reply began
        longest = f"{max(beside):,.1f} ms" if beside else "-"
        lines.append(
            f"| {name} | {got['cold_ms']:,.0f} ms at {got['cold_at']:,} | "
            f"{got['same_after_restart']} | {got['tokenizer_ms']:,.0f} ms | "
            f"{got['cold_session_ms']:,.0f} ms | {len(beside)} ({longest}) | {got['errors']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())  # noqa: T201
