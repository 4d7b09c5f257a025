"""Long sessions through the real daemon (issue 22, the session half): appends at growing
lengths, the first snapshot and assemble after a restart, assemble warm.

Each tree runs in its own `tokend serve` (PYTHONPATH=<tree>/server) on a private unix socket and
SQLite file (or a database on the suite's PostgreSQL server), talked to as an editor does
(JSON-RPC over the socket); this tree beside main before this work (BEFORE_REV) in the same run. Compaction is off and the window large, so the
live context grows with every append: the worst case for anything that walks it.

- Appends: one connection, 16 in flight; each exchange an assistant toolCall carrying the
  provider's usage, then its ~3 KB toolResult (counted exactly, o200k, committed to SQLite).
  The rate over 400 appends is taken at each length, with the daemon's CPU seconds per append
  (/proc: less sensitive than wall time to the other users of a shared machine).
- Restart: the daemon is stopped (SIGTERM) and started again on the same store; the first
  request is timed: `budget/snapshot`, then (after another restart) `context/assemble`. The
  daemon's RSS after the build and after the reload.
- Assemble (when ASSEMBLE_AT names sizes; bench/scale_assemble.py is the assemble's own
  section): p50 of 20 `context/assemble` (openai format) warm, on a session of short turns
  (20 to 60 words, usage on every assistant reply), then the first after a restart.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any

from bench.append_order import Daemon
from bench.baseline import ROOT, baseline_tree
from bench.daemon import _rss_mib

BEFORE_REV = "46d4bc5"  # main before this stop's work (fewer statements per append)
MODEL = "gpt-4o"
WINDOW = 1_000_000_000  # large: nothing is refused or compacted as the context grows
IN_FLIGHT = 16
STRETCH = 400  # appends per measured rate
MARKS = (1_000, 5_000, 10_000, 20_000, 50_000)
BASELINE_MARKS = (1_000, 5_000, 10_000, 20_000)  # 50,000 takes the baseline 3 minutes more
ASSEMBLE_AT = ()  # bench/scale_assemble.py times assemble, warm and cold
BASELINE_ASSEMBLE_AT = ()
PG_MARKS = MARKS  # PostgreSQL: the same sizes, this tree to 50,000, the baseline to 20,000
PG_ASSEMBLE_AT = (5_000, 10_000)  # PostgreSQL: assemble warm and cold here too (SQLite's own
# figures are bench/scale_assemble.py's)
# TOKEND_SCALE_ENGINES=sqlite (or postgresql) runs one engine's half alone (a quiet slot's
# budget); `make bench` runs both.
ENGINES = os.environ.get("TOKEND_SCALE_ENGINES", "sqlite,postgresql").split(",")
# TOKEND_SCALE_BEFORE=REV: the baseline is REV instead, to this tree's sizes (a branch beside
# the main it branched from: issue 22's daemon after a restart, at 50,000 messages).
BEFORE = os.environ.get("TOKEND_SCALE_BEFORE")
LINE = "src/module_{:05d}.py:{}: E501 line too long (121 > 100 characters) in handle_request\n"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def tool_exchange(start: int, count: int) -> list[dict[str, Any]]:
    """`count` messages from index `start`: toolCall (with usage) / ~3 KB toolResult pairs."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + count, 2):
        call = {"type": "toolCall", "callId": f"c{i}", "name": "Bash", "input": {"n": i}}
        usage = {"inputTokens": 50, "outputTokens": 20, "cacheReadTokens": 1_000 + 10 * i}
        out.append({"role": "assistant", "parts": [call], "usage": usage})
        output = "".join(LINE.format(i, k) for k in range(36))
        result = {"type": "toolResult", "callId": f"c{i}", "name": "Bash", "output": output}
        out.append({"role": "tool", "parts": [result]})
    return out


def short_turns(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(20 + i % 41))
        message: dict[str, Any] = {"role": "user" if i % 2 == 0 else "assistant"}
        message["parts"] = [{"type": "text", "text": f"{i}: {text}"}]
        if i % 2:
            message["usage"] = {"inputTokens": 40, "outputTokens": 30, "cacheReadTokens": 30 * i}
        out.append(message)
    return out


def pipelined(client: Any, sid: str, messages: list[dict[str, Any]]) -> tuple[float, int]:
    """Append `messages` with IN_FLIGHT in flight: (seconds, errors)."""
    waiting: deque[int] = deque()
    sent = errors = 0
    began = time.perf_counter()
    while sent < len(messages) or waiting:
        while sent < len(messages) and len(waiting) < IN_FLIGHT:
            params = {"sessionId": sid, "message": messages[sent]}
            waiting.append(client.start_request("session/append", params))
            sent += 1
        reply = client.read()
        if reply.get("id") in waiting:
            waiting.remove(reply["id"])
            errors += "error" in reply
    return time.perf_counter() - began, errors


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _restart(daemon: Daemon) -> int:
    daemon.processes.stop_all()
    return daemon.processes.daemon(daemon.sock).pid


def _timed(client: Any, method: str, params: dict[str, Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = client.request(method, params)
    return (time.perf_counter() - began) * 1000, result


def measure(
    tree: Path, marks: tuple[int, ...], assemble_at: tuple[int, ...], database: str | None = None
) -> dict[str, Any]:
    """One daemon of `tree` (on `database`, else its own SQLite file): appends, a restart,
    assemble at `assemble_at` (none: not measured)."""
    daemon = Daemon(tree)
    out: dict[str, Any] = {"rates": {}, "cpu_ms": {}, "errors": 0}
    try:
        if database is not None:
            daemon.processes.env["TOKEND_DATABASE_URL"] = database
            _restart(daemon)
        pid = daemon.processes.started[-1].pid
        client = daemon.client("scale")
        sid = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        _grow(client, sid["sessionId"], pid, marks, out)
        before = client.request("budget/snapshot", {"sessionId": sid["sessionId"]})
        out["rss_built"] = _rss_mib(pid)
        client.close()
        pid = _restart(daemon)
        client = daemon.client("scale")
        out["first_snapshot_ms"], after = _timed(client, "budget/snapshot", sid)
        out["same_snapshot"] = _lasting(before) == _lasting(after)
        out["rss_loaded"] = _rss_mib(pid)
        client.close()
        if assemble_at:
            out.update(_assemble(daemon, assemble_at))
    finally:
        daemon.stop()
    return out


def _lasting(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot less what moves with the clock alone: the rate, the prompt cache's
    seconds left."""
    out = {k: v for k, v in snapshot.items() if k != "rate"}
    if isinstance(out.get("promptCache"), dict):
        out["promptCache"] = {k: v for k, v in out["promptCache"].items() if k != "secondsLeft"}
    return out


def _grow(client: Any, sid: str, pid: int, marks: tuple[int, ...], out: dict[str, Any]) -> None:
    """Append tool exchanges up to each mark, timing the last STRETCH before it."""
    done = 0
    for mark in marks:
        if mark - STRETCH > done:
            out["errors"] += pipelined(client, sid, tool_exchange(done, mark - STRETCH - done))[1]
            done = mark - STRETCH
        cpu = _cpu_s(pid)
        took, errors = pipelined(client, sid, tool_exchange(done, STRETCH))
        out["errors"] += errors
        out["rates"][mark] = STRETCH / took
        out["cpu_ms"][mark] = (_cpu_s(pid) - cpu) * 1000 / STRETCH
        done += STRETCH


def _assemble(daemon: Daemon, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Warm p50 at each of `sizes` live messages; cold (the first request after a restart)
    at the last."""
    client = daemon.client("assemble")
    sid = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})["sessionId"]
    params = {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."}
    turns, done, warm = short_turns(sizes[-1]), 0, {}
    for size in sizes:
        pipelined(client, sid, turns[done:size])
        done = size
        client.request("context/assemble", params)  # warm, as a live session is
        warm[size] = statistics.median(
            _timed(client, "context/assemble", params)[0] for _ in range(20)
        )
    client.close()
    _restart(daemon)
    client = daemon.client("assemble")
    cold, _ = _timed(client, "context/assemble", params)
    client.close()
    return {"assemble_warm_ms": warm, "assemble_cold_ms": cold, "assemble_cold_at": sizes[-1]}


def run() -> str:
    results: dict[str, dict[str, Any]] = {}
    postgres: dict[str, dict[str, Any]] = {}
    from tests.pg import PostgresServer  # the suite's own server (the pgserver wheel)

    rev, before_marks = (BEFORE, MARKS) if BEFORE else (BEFORE_REV, BASELINE_MARKS)
    name = f"main at {rev}"
    with baseline_tree(rev) as before:
        if "sqlite" in ENGINES:
            results["this tree"] = measure(ROOT, MARKS, ASSEMBLE_AT)
            if before is not None:
                results[name] = measure(before, before_marks, BASELINE_ASSEMBLE_AT)
        if "postgresql" in ENGINES:
            server = PostgresServer().start()
            try:
                url = server.new_database("scale_a")
                postgres["this tree"] = measure(ROOT, PG_MARKS, PG_ASSEMBLE_AT, url)
                if before is not None:
                    url = server.new_database("scale_b")
                    postgres[name] = measure(before, before_marks, PG_ASSEMBLE_AT, url)
            finally:
                server.stop()
    sections = [_section(results, "SQLite")] if results else []
    sections += [_section(postgres, "PostgreSQL")] if postgres else []
    return "\n".join(sections)


def _section(results: dict[str, dict[str, Any]], engine: str) -> str:
    marks = sorted({m for got in results.values() for m in got["rates"]})
    lines = [
        f"### Long sessions on {engine}: appends, restarts, assemble (bench/scale_session.py)\n",
        f"A real `tokend serve` per tree, {engine}, one connection, {IN_FLIGHT} in flight; each "
        "exchange a toolCall with usage, then a ~3 KB toolResult counted exactly (o200k) and "
        f"committed. Rate over {STRETCH} appends at each length of the live context (no "
        "compaction), with the daemon's CPU ms per append. Baseline: "
        f"main at {BEFORE or BEFORE_REV}, same run, to {_baseline_last(results):,} messages. Then the daemon is stopped and started on the same store and the first "
        "`budget/snapshot` timed (at each daemon's last length); the daemon's RSS once built and "
        "after the restart and that snapshot.\n",
        "| daemon | " + " | ".join(f"appends/s at {m:,}" for m in marks) + " | errors |",
        "|---|" + "---|" * (len(marks) + 1),
    ]
    for name, got in results.items():
        cells = [
            f"{got['rates'][m]:,.0f} ({got['cpu_ms'][m]:.2f} ms CPU)" if m in got["rates"] else "-"
            for m in marks
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {got['errors']} |")
    lines += [
        "",
        "| daemon | rate at last length / at 1,000 | CPU per append, last / 1,000 | first "
        "`budget/snapshot` after a restart | same snapshot as before | RSS built / loaded "
        "| `context/assemble` warm p50 | first `context/assemble` after a restart |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, got in results.items():
        last = max(got["rates"])
        lines.append(
            f"| {name} (last: {last:,}) | {got['rates'][last] / got['rates'][1_000]:.2f}x | "
            f"{got['cpu_ms'][last] / got['cpu_ms'][1_000]:.2f}x | {got['first_snapshot_ms']:,.0f} ms "
            f"| {got['same_snapshot']} | {got['rss_built']:.0f} / {got['rss_loaded']:.0f} MiB | "
            + _assembled(got)
        )
    return "\n".join(lines) + "\n"


def _baseline_last(results: dict[str, dict[str, Any]]) -> int:
    return max(
        (max(got["rates"]) for name, got in results.items() if name != "this tree"), default=0
    )


def _assembled(got: dict[str, Any]) -> str:
    if "assemble_warm_ms" not in got:
        return "not measured | not measured |"
    warm = ", ".join(f"{ms:.1f} ms at {n:,}" for n, ms in got["assemble_warm_ms"].items())
    return f"{warm} | {got['assemble_cold_ms']:,.0f} ms at {got['assemble_cold_at']:,} |"


if __name__ == "__main__":
    print(run())  # noqa: T201
