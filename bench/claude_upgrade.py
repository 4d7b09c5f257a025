"""Estimate first, exact later (issue 20), beside the Claude tier's section (bench/claude.py).

The real `tokend serve` of each tree; one connection appends a 1 MB tool result (the estimator
corpus's .py/.js files, a `Read` result, which no gate shortens) to a claude-opus-4-6 session
while another sends `budget/snapshot` of its own gpt-4o session back to back. Measured: when the
append's reply arrives, when the session's exact count arrives (the first `budget/didChange` of
the appended version or later whose `messages` basis is `exact`: in main that is the append's
own), the message's tokens in the reply and once exact (the gauge's move: the same in every
tree), and the other connection's round trips from the send to the exact count. This tree beside main 2c3728f (the
Claude tier counted by ctok itself) and main before estimate-first, on SQLite; this tree and main
before estimate-first on PostgreSQL too (the suite's own server, tests/pg.py, a fresh database a
run).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree
from bench.daemon import _env, _Processes, _unix_client
from bench.estimator import gather_corpus
from bench.stall import _percentile

MAIN_REV = "2c3728f"  # main with the Claude tier counted by ctok itself (the brief's baseline)
BEFORE_REV = "0292bca"  # main before estimate-first
REPEATS = 3
MB = 1_000_000


def _tool_result() -> str:
    samples = gather_corpus(files_per_source=40)
    text = "\n".join(s.text for s in samples if s.source in ("python", "javascript"))
    while len(text) < MB:
        text += text
    return text[:MB]


def _messages_basis(snapshot: dict[str, Any]) -> str:
    return next(b["basis"] for b in snapshot["breakdown"] if b["category"] == "messages")


def _append_and_wait(writer: Any, target: str, tool_result: str, out: dict[str, Any]) -> None:
    """Send the append; note when its reply and the exact count arrive (seconds from the send)."""
    part = {"type": "toolResult", "callId": "c1", "name": "Read", "output": tool_result}
    params = {"sessionId": target, "message": {"role": "tool", "parts": [part]}}
    began = time.perf_counter()
    request_id = writer.start_request("session/append", params)
    version = None
    while "exact_s" not in out or "reply_s" not in out:
        message = writer.read()
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"the append failed: {message['error']}")
            out["reply_s"] = time.perf_counter() - began
            out["reply_tokens"] = message["result"]["tokens"]
            version = message["result"]["version"]
        elif message.get("method") == "budget/didChange":
            snapshot = message["params"]["snapshot"]
            appended = version is None or snapshot["version"] >= version
            if snapshot["sessionId"] == target and appended and snapshot["version"] >= 2:
                if _messages_basis(snapshot) == "exact" and "exact_s" not in out:
                    out["exact_s"] = time.perf_counter() - began
                    out["used"] = snapshot["usedTokens"]
    out["done"] = True


def _one_run(server: Path, tool_result: str, database: Callable[[], str] | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tokend-claude-upgrade-") as folder:
        base = Path(folder)
        env = _env(base)
        env["PYTHONPATH"] = str(server)
        if database is not None:  # a fresh PostgreSQL database for each run
            env["TOKEND_DATABASE_URL"] = database()
        processes = _Processes(base, env)
        try:
            sock = base / "run" / "tokend.sock"
            processes.daemon(sock)
            reader, writer = _unix_client(sock, "reader"), _unix_client(sock, "writer")
            watched = reader.request("session/create", {"model": "gpt-4o"})["sessionId"]
            target = writer.request("session/create", {"model": "claude-opus-4-6"})["sessionId"]
            call = {"type": "toolCall", "callId": "c1", "name": "Read", "input": {"path": "x"}}
            writer.request(
                "session/append",
                {"sessionId": target, "message": {"role": "assistant", "parts": [call]}},
            )
            for _ in range(20):  # warm: the first snapshot of a session loads it
                reader.request("budget/snapshot", {"sessionId": watched})
            before = writer.request("budget/snapshot", {"sessionId": target})["usedTokens"]
            out: dict[str, Any] = {"before": before}
            thread = threading.Thread(
                target=_append_and_wait, args=(writer, target, tool_result, out), daemon=True
            )
            waits = []
            thread.start()
            while not out.get("done") and thread.is_alive():
                started = time.perf_counter()
                reader.request("budget/snapshot", {"sessionId": watched})
                waits.append((time.perf_counter() - started) * 1000)
            thread.join(60)
            reader.close()
            writer.close()
        finally:
            processes.stop_all()
    if "exact_s" not in out:
        raise RuntimeError("the exact count never arrived")
    out["waits"] = waits
    return out


def _rows(
    label: str, server: Path, tool_result: str, database: Callable[[], str] | None = None
) -> str:
    runs = [_one_run(server, tool_result, database) for _ in range(REPEATS)]
    waits = [w for r in runs for w in r["waits"]]
    exact = {r["used"] - r["before"] for r in runs}  # the message's exact count: the gauge's move
    return (
        f"| {label} | {statistics.median(r['reply_s'] for r in runs):.2f} "
        f"| {statistics.median(r['exact_s'] for r in runs):.2f} "
        f"| {statistics.median(r['reply_tokens'] for r in runs):,} "
        f"| {', '.join(f'{u:,}' for u in sorted(exact))} | {len(waits)} "
        f"| {statistics.median(waits):.1f} | {_percentile(waits, 0.99):.1f} | {max(waits):.1f} |"
    )


def run() -> str:
    from tests.pg import PostgresServer  # the suite's own server (the pgserver wheel)

    tool_result = _tool_result()
    header = [
        "| tree | store | reply s | exact count s | message tokens in the reply | message tokens "
        "once exact | snapshots | p50 ms | p99 ms | max ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    out = [
        "### Claude: estimate first, exact later (bench/claude_upgrade.py)",
        "",
        "A 1 MB tool result appended to a claude-opus-4-6 session of the real `tokend serve` "
        f"(median of {REPEATS} runs, each its own daemon), on SQLite and on PostgreSQL (the "
        "suite's own server, a fresh database each run); the other connection's "
        "`budget/snapshot` round trips from the send to the exact count, all runs together:",
        "",
        *header,
    ]
    postgres = PostgresServer().start()
    try:
        trees = [("this tree", ROOT / "server")]
        with baseline_tree(BEFORE_REV) as before, baseline_tree(MAIN_REV) as main:
            if before is not None:
                trees.append((f"main {BEFORE_REV} (before estimate first)", before / "server"))
            if main is not None:
                trees.append((f"main {MAIN_REV}", main / "server"))
            for label, server in trees:
                out.append(_rows(f"{label} | SQLite", server, tool_result))
            for label, server in trees[:2]:
                row = _rows(f"{label} | PostgreSQL", server, tool_result, postgres.new_database)
                out.append(row)
    finally:
        postgres.stop()
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(run())
