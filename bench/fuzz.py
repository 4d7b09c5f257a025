"""A fuzz of every documented method and notification of the real `tokend serve`, and what
unauthenticated TCP clients cost an authenticated one (preauth.py).

The cases (fuzz_cases.py): each field of each method's params, at any depth, and params itself,
replaced in turn by each of BAD_VALUES (null, booleans, 0/-1/2^63, 1e308, NaN, Infinity, "",
1 MB and 8 MB strings, NUL, a lone surrogate, RTL and emoji, [], {}, objects nested 62 and
1,000 levels), the big strings last. Meanwhile another process sends `budget/snapshot` of a
session of its own back to back (`probe`).

Counted: replies carrying a traceback; nonsense accepted (Case.nonsense_if_accepted); the
largest error reply; connections the daemon closed; the good connection's waits; the daemon's
RSS before, after the small values and after all.

`python -m bench.fuzz` (or `python -m bench.run fuzz`) prints the section: today's daemon beside
BEFORE_TRUST_REV's in the same run, each fuzz bounded by FUZZ_BUDGET_S; a daemon past
RSS_LIMIT_MIB is killed and the run says so.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcMethodNotFound

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree
from bench.daemon import _env, _p, _Processes, _rss_mib, _unix_client
from bench.fuzz_cases import BAD_VALUES, BIG, Case, calls, cases, uncovered
from bench.preauth import (
    INTRUDERS,
    PHASE_S,
    PRE_AUTH_LEVELS,
    pre_auth_daemon,
)

FUZZ_BUDGET_S = 180.0  # per daemon
MAIN_BEFORE_REV = "2c3728f"  # main before the third trust branch (big replies, edits, cycles)
RSS_LIMIT_MIB = 3072  # a daemon past this is killed: the machine is shared
REPLY_TIMEOUT_S = 60.0
ERROR_REPLY_LIMIT = 64 << 10
METHOD_NOT_FOUND = JsonRpcMethodNotFound.CODE  # what the fuzz client answers a server's request
FRESH = {"initialize", "shutdown", "exit"}  # each case on a connection of its own

# -- running it -------------------------------------------------------------------------------


@dataclass
class Outcome:
    cases: int = 0
    planned: int = 0
    tracebacks: list[str] = field(default_factory=list)
    nonsense: list[str] = field(default_factory=list)
    largest_error: tuple[int, str] = (0, "")
    closed: list[str] = field(default_factory=list)
    timeouts: list[str] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (ms, case), the 5 slowest
    spans: list[tuple[float, float, str]] = field(default_factory=list)  # (from, to, case), wall


class Connection:
    """Raw frames over a unix socket; answers a server's request with an error."""

    def __init__(self, sock_path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(sock_path))
        self.buffer = b""
        self.next_id = 1000

    def send(self, body: bytes) -> None:
        self.sock.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.send(json.dumps(msg).encode())
        return self.reply(self.next_id, REPLY_TIMEOUT_S)[0]

    def reply(self, msg_id: int, timeout: float) -> tuple[dict[str, Any], int]:
        """The reply to `msg_id` and its body's size in bytes."""
        deadline = time.monotonic() + timeout
        while True:
            body = self._body(deadline)
            message = json.loads(body)
            if "method" in message and "id" in message:  # the server asks: say no
                error = {"code": METHOD_NOT_FOUND, "message": "the fuzz client answers nothing"}
                out = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                self.send(json.dumps(out).encode())
            elif message.get("id") == msg_id and "method" not in message:
                return message, len(body)

    def _body(self, deadline: float) -> bytes:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                length = int(re.search(rb"(?i)content-length: *(\d+)", self.buffer[:end])[1])  # type: ignore[index]
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4 : end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length :]
                    return body
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                raise TimeoutError
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def _connect(sock_path: Path) -> Connection:
    conn = Connection(sock_path)
    params = {"processId": None, "rootUri": None, "capabilities": {}, "clientInfo": {"name": "fz"}}
    conn.request("initialize", params)
    conn.send(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    return conn


def run_cases(
    sock_path: Path,
    chosen: list[Case],
    budget_s: float,
    alive: Any = lambda: True,
    before_big: Any = lambda: None,
) -> Outcome:
    outcome = Outcome(planned=len(chosen))
    started = time.monotonic()
    conn = _connect(sock_path)
    big_started = False
    for case in chosen:
        if case.value in BIG and not big_started:
            big_started = True
            before_big()
        if time.monotonic() - started > budget_s:
            outcome.stopped = f"the {budget_s:.0f} s budget ran out"
            break
        if not alive():
            outcome.stopped = "the daemon was killed (RSS over the limit)"
            break
        label = f"{case.call.method} {'.'.join(map(str, case.path)) or 'params'} = {case.value}"
        target = conn
        if case.call.method == "initialize":
            target = Connection(sock_path)
        elif case.call.method in FRESH:
            target = _connect(sock_path)
        began, began_wall = time.perf_counter(), time.time()
        try:
            _one(target, case, label, outcome)
            took = (time.perf_counter() - began) * 1000
            outcome.slowest = sorted([*outcome.slowest, (took, label)], reverse=True)[:5]
            outcome.spans.append((began_wall, time.time(), label))
        except (EOFError, ConnectionError):
            if case.call.method not in FRESH:
                outcome.closed.append(label)
                try:
                    conn = _connect(sock_path)
                except (EOFError, OSError):
                    outcome.stopped = f"the daemon took no new connection after `{label}`"
                    outcome.cases += 1
                    break
        except TimeoutError:
            outcome.timeouts.append(label)
            break  # the daemon is stuck: what follows would only wait behind it
        finally:
            if target is not conn:
                target.close()  # a connection of its own (initialize, shutdown, exit)
        outcome.cases += 1
    conn.close()
    outcome.seconds = time.monotonic() - started
    return outcome


def _one(conn: Connection, case: Case, label: str, outcome: Outcome) -> None:
    conn.next_id += 1
    msg_id = conn.next_id
    conn.send(case.body(msg_id))
    if case.call.notification:
        if case.call.method == "exit":
            return
        conn.next_id += 1
        sync = {"jsonrpc": "2.0", "id": conn.next_id, "method": "daemon/status", "params": None}
        conn.send(json.dumps(sync).encode())
        reply, size = conn.reply(conn.next_id, REPLY_TIMEOUT_S)
    else:
        reply, size = conn.reply(msg_id, REPLY_TIMEOUT_S)
    text = json.dumps(reply)
    if "traceback" in text.lower() or 'File "' in text:
        outcome.tracebacks.append(label)
    if "error" in reply and size > outcome.largest_error[0]:
        outcome.largest_error = (size, label)
    if "result" in reply and not case.call.notification and case.nonsense_if_accepted():
        outcome.nonsense.append(label)


# -- the good connection (its own process) --------------------------------------------------


def probe(sock_path: str) -> None:
    """`budget/snapshot` of a session of its own, back to back until stdin closes; prints the
    round trips (ms). A reply that has not come when stdin closes counts as the wait so far."""
    client = _unix_client(Path(sock_path), "probe")
    session_id = client.request("session/create", {"model": "gpt-4o"})["sessionId"]
    message = {"role": "user", "parts": [{"type": "text", "text": "hello there"}]}
    client.request("session/append", {"sessionId": session_id, "message": message})
    samples: list[float] = []
    starts: list[float] = []  # wall clock: which fuzz cases ran meanwhile (the section says)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    try:
        while not stop.is_set():
            began = time.perf_counter()
            starts.append(time.time())
            msg_id = client.start_request("budget/snapshot", {"sessionId": session_id})
            while not stop.is_set():
                if client.buffer or select.select([client.read_fd], [], [], 0.5)[0]:
                    if client.read().get("id") == msg_id:
                        break
            samples.append((time.perf_counter() - began) * 1000)
    except (EOFError, OSError):  # the daemon died (or was killed past RSS_LIMIT_MIB)
        samples.append((time.perf_counter() - began) * 1000)
    print(json.dumps({"waits": samples, "starts": starts[: len(samples)]}), flush=True)


# -- one daemon ---------------------------------------------------------------------------------


def setup_session(sock_path: Path, workspace: Path) -> tuple[str, list[str], str]:
    """A session on `workspace` with a turn and a tool result; (its id, message ids, a ref)."""
    (workspace / "a.py").write_text("def start():\n    return 1\n")
    (workspace / "b.py").write_text("from a import start\n\nstart()\n")
    conn = _connect(sock_path)
    created = conn.request(
        "session/create", {"model": "gpt-4o", "workspaceUri": workspace.as_uri()}
    )
    session_id = created["result"]["sessionId"]
    ids = []
    for message in [
        {"role": "user", "parts": [{"type": "text", "text": "list the files"}]},
        {"role": "assistant", "parts": [{"type": "toolCall", "callId": "c1", "name": "bash",
                                         "input": {"command": "ls"}}]},
        {"role": "tool", "parts": [{"type": "toolResult", "callId": "c1", "name": "bash",
                                    "output": "a.py\nb.py\n" * 4000}]},
    ]:  # fmt: skip
        reply = conn.request("session/append", {"sessionId": session_id, "message": message})
        ids.append(reply["result"]["messageId"])
    found = re.search(r"sha256:[0-9a-f]{64}", json.dumps(conn.request(
        "session/messages", {"sessionId": session_id})))  # fmt: skip
    conn.request("files/add", {"sessionId": session_id, "paths": ["a.py"]})
    conn.close()
    return session_id, ids, found.group(0) if found else "sha256:" + "0" * 64


def warm_up(sock_path: Path, workspace: Path) -> None:
    """Every method and notification once, with its valid params, on a session of its own
    (protocol.md's examples with its ids): what the first use of each loads is in the daemon
    before its RSS is taken as the fuzz's baseline."""
    session_id, ids, ref = setup_session(sock_path, workspace)
    conn = _connect(sock_path)
    try:
        for call in calls(session_id, ids, workspace, ref):
            if call.method in FRESH:
                continue
            message = {"jsonrpc": "2.0", "method": call.method, "params": call.params}
            if call.notification:
                conn.send(json.dumps(message).encode())
            else:
                conn.request(call.method, call.params)
    finally:
        conn.close()


def fuzz_daemon(server_dir: Path, per_call: int | None, budget_s: float) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkfz-"))  # short: unix socket paths max ~104 bytes
    env = {**_env(base), "PYTHONPATH": str(server_dir)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    workspace = base / "ws"
    workspace.mkdir()
    killed = threading.Event()
    try:
        daemon = procs.daemon(sock)
        time.sleep(0.5)
        rss_start = _rss_mib(daemon.pid)
        warm_up(sock, workspace)
        session_id, ids, ref = setup_session(sock, workspace)
        all_calls = calls(session_id, ids, workspace, ref)
        chosen = cases(all_calls, per_call)
        time.sleep(0.5)
        rss_before = _rss_mib(daemon.pid)
        peak = [rss_before]

        def watch() -> None:
            while daemon.poll() is None and not killed.is_set():
                peak[0] = max(peak[0], rss := _rss_mib(daemon.pid))
                if rss > RSS_LIMIT_MIB:
                    daemon.kill()
                    killed.set()
                time.sleep(0.2)

        threading.Thread(target=watch, daemon=True).start()
        prober = subprocess.Popen(
            [sys.executable, "-m", "bench.fuzz", "probe", str(sock)],
            cwd=ROOT, env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{server_dir}"},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert prober.stdout is not None and prober.stdin is not None
        prober.stdout.readline()
        small = [float("nan")]

        def before_big() -> None:
            time.sleep(0.5)
            small[0] = _rss_mib(daemon.pid)

        outcome = run_cases(sock, chosen, budget_s, lambda: not killed.is_set(), before_big)
        prober.stdin.close()
        try:
            probed = json.loads(prober.stdout.readline() or "{}")
        except ValueError:
            probed = {}
        waits, starts = probed.get("waits", []), probed.get("starts", [])
        prober.kill()
        time.sleep(1.0)
        rss_after = _rss_mib(daemon.pid) if daemon.poll() is None else float("nan")
        return {
            "outcome": outcome, "waits": waits, "rss_start": rss_start, "rss_before": rss_before,
            "rss_small": small[0],
            "blamed": _blamed(waits, starts, outcome.spans),
            "rss_after": rss_after, "rss_peak": peak[0], "uncovered": uncovered(all_calls),
            "killed": killed.is_set(),
        }  # fmt: skip
    finally:
        killed.set()
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


# -- the section ---------------------------------------------------------------------------------


def run() -> str:
    ours = fuzz_daemon(ROOT / "server", None, FUZZ_BUDGET_S)
    ours_pre = pre_auth_daemon(ROOT / "server")
    runs = [("tokend", ours, ours_pre)]
    with baseline_tree(MAIN_BEFORE_REV) as tree:
        if tree is not None:
            main = fuzz_daemon(tree / "server", None, FUZZ_BUDGET_S)
            runs.append(
                (f"main before ({MAIN_BEFORE_REV})", main, pre_auth_daemon(tree / "server"))
            )
    with baseline_tree(BEFORE_TRUST_REV) as tree:
        if tree is not None:
            before = fuzz_daemon(tree / "server", None, FUZZ_BUDGET_S)
            runs.append((f"before ({BEFORE_TRUST_REV})", before, pre_auth_daemon(tree / "server")))
    return _section(runs)


def _blamed(
    waits: list[float], starts: list[float], spans: list[tuple[float, float, str]]
) -> list[tuple[float, list[str]]]:
    """The good connection's 3 longest waits, each with the fuzz cases that ran meanwhile (wall
    clock: the prober and the fuzzer are two processes on one machine)."""
    longest = sorted(zip(waits, starts, strict=False), reverse=True)[:3]
    blamed = []
    for ms, began in longest:
        ended = began + ms / 1000
        during = [label for lo, hi, label in spans if lo < ended and hi > began]
        blamed.append((ms, during[:3]))
    return blamed


def _section(runs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    ours = runs[0][1]
    o = ours["outcome"]
    lines = [
        "### Fuzz: every documented method and notification, each field replaced (bench/fuzz.py)\n",
        f"{o.planned:,} cases: each field of each method's params (protocol.md's examples with a "
        "live session's ids, and templates for the methods it shows no example of) and params "
        f"itself, replaced by each of {len(BAD_VALUES)} values "
        f"({', '.join(name for name, _ in BAD_VALUES)}), in a fixed shuffled order with the "
        "1 MB and then the 8 MB strings last, on a real `tokend serve`, while another process "
        "sends `budget/snapshot` of its own session back to back on a good connection. Each "
        f"daemon gets {FUZZ_BUDGET_S:.0f} s; one past {RSS_LIMIT_MIB:,} MiB of RSS is killed; a "
        "case without a reply in 60 s stops its run (the daemon is stuck). Same run: today's "
        f"daemon, main before this branch ({MAIN_BEFORE_REV}) and the daemon before the trust work "
        f"({BEFORE_TRUST_REV}). Before the fuzz, each daemon gets every method and notification "
        "once with valid params (a warm-up: what first use loads is in it); RSS in MiB at start, "
        "after the warm-up (the baseline of the goals), after the small values, after all.\n",
        "| daemon | cases run | tracebacks | nonsense accepted | largest error reply | "
        "connections closed | stuck on | good connection: p50 / p99 / max wait | RSS start "
        "→ warm → after the small values → after all (peak) |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for name, r, _ in runs:
        o = r["outcome"]
        waits = r["waits"] if len(r["waits"]) > 1 else [float("nan")] * 2
        stuck = f"`{o.timeouts[0]}`" if o.timeouts else "nothing"
        ran = f"{o.cases:,} in {o.seconds:.0f} s" + (f" ({o.stopped})" if o.stopped else "")
        lines.append(
            f"| {name} | {ran} | {len(o.tracebacks)} | {len(o.nonsense)} | "
            f"{o.largest_error[0] / 1024:,.1f} KiB | {len(o.closed)} | {stuck} | "
            f"{_p(waits, 50):.1f} / {_p(waits, 99):.1f} / {max(waits):,.1f} ms | "
            f"{r['rss_start']:.0f} → {r['rss_before']:.0f} → {r['rss_small']:.0f} → "
            f"{r['rss_after']:.0f} "
            f"({r['rss_peak']:.0f}) MiB |"
        )
    o = ours["outcome"]
    waits = ours["waits"] if len(ours["waits"]) > 1 else [float("inf")] * 2
    pre = runs[0][2]
    pre_ratio = _p(pre["attacked"], 99) / _p(pre["idle"], 99)
    goals = [
        ("0 tracebacks", not o.tracebacks),
        ("0 nonsense accepted", not o.nonsense),
        ("every error reply < 64 KiB", o.largest_error[0] < ERROR_REPLY_LIMIT),
        ("the good connection's max wait <= 50 ms", max(waits) <= 50),
        (
            "RSS after the small values <= warm + 20 MB",
            ours["rss_small"] - ours["rss_before"] <= 20,
        ),
        ("RSS after all <= warm + 20 MB", ours["rss_after"] - ours["rss_before"] <= 20),
        ("every documented method covered", not ours["uncovered"]),
        (f"p99 with {INTRUDERS} unauthenticated clients within 2x idle", pre_ratio <= 2),
    ]
    lines += ["", "Goals (today's daemon): " + "; ".join(
        f"{text}: {'met' if ok else '**missed**'}" for text, ok in goals) + ".", ""]  # fmt: skip
    for name, r, _ in runs:
        o = r["outcome"]
        for what, items in (("tracebacks", o.tracebacks), ("nonsense accepted", o.nonsense),
                            ("connections closed", o.closed)):  # fmt: skip
            if items:
                shown = "; ".join(f"`{i}`" for i in items[:4])
                more = f" and {len(items) - 4:,} more" if len(items) > 4 else ""
                lines.append(f"- {name}, {what}: {shown}{more}.")
        slow = "; ".join(f"`{label}` {ms / 1000:.1f} s" for ms, label in o.slowest[:3])
        lines.append(f"- {name}, largest error reply: `{o.largest_error[1]}`; slowest: {slow}.")
        blamed = "; ".join(
            f"{ms:,.0f} ms during " + (", ".join(f"`{c}`" for c in during) or "no case")
            for ms, during in r.get("blamed", [])
        )
        if blamed:
            lines.append(f"- {name}, the good connection's longest waits: {blamed}.")
    lines += [
        "",
        f"{INTRUDERS} unauthenticated TCP clients, each sending over and over the worst frame the "
        f"pre-authentication limit allows (an `initialize` nesting objects {PRE_AUTH_LEVELS:,} "
        "levels deep, just under 256 KiB, no id), while an authenticated TCP client sends "
        f"`budget/snapshot` back to back for {PHASE_S:.0f} s (after {PHASE_S:.0f} s of them "
        "idle):\n",
        "| daemon | idle: round trips, p50 / p99 / max | attacked: round trips, p50 / p99 / max | "
        "p99 attacked / idle | frames the intruders sent |",
        "|---|---|---|---:|---:|",
    ]
    for name, _, pre in runs:
        idle, hit = pre["idle"], pre["attacked"]
        lines.append(
            f"| {name} | {len(idle):,}, {_p(idle, 50):.2f} / {_p(idle, 99):.2f} / {max(idle):.1f} ms | "
            f"{len(hit):,}, {_p(hit, 50):.2f} / {_p(hit, 99):.2f} / {max(hit):.1f} ms | "
            f"{_p(hit, 99) / _p(idle, 99):.2f}x | {pre['frames']:,} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "probe":
        probe(argv[1])
    else:
        print(run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
