"""A fuzz of every documented method and notification of the real `tokend serve`, and what
unauthenticated TCP clients cost an authenticated one.

Each method's params come from protocol.md's own examples (`--> {...}` lines, ids swapped for
a live session's) or, for the methods it shows no example of, from `_templates`; every method
and notification protocol.md heads a section with must be covered (`uncovered()`). Each field
at any depth, and params itself, is replaced in turn by each of BAD_VALUES (null, booleans,
0/-1/2^63, 1e308, NaN, Infinity, "", 1 MB and 8 MB strings, NUL, a lone surrogate, RTL and
emoji, [], {}, objects nested 62 and 1,000 levels), the big strings last. Meanwhile another
process sends `budget/snapshot` of a session of its own back to back (`probe`).

Counted: replies carrying a traceback; nonsense accepted (a result for a value of the wrong
JSON type where the example had a string, integer, boolean, array or object, an integer out of
0..2^31-1, NaN/Infinity or a lone surrogate anywhere, params nested over 64 levels); the largest
error reply; connections the daemon closed; the good connection's waits; the daemon's RSS before,
after the small values and after all. Then INTRUDERS processes send the worst pre-authentication
frame over TCP again and again while an authenticated TCP client sends `budget/snapshot`.

`python -m bench.fuzz` (or `python -m bench.run fuzz`) prints the section: today's daemon beside
BEFORE_TRUST_REV's in the same run, each fuzz bounded by FUZZ_BUDGET_S; a daemon past
RSS_LIMIT_MIB is killed and the run says so.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree
from bench.daemon import _env, _p, _Processes, _rss_mib, _unix_client

FUZZ_BUDGET_S = 180.0  # per daemon
RSS_LIMIT_MIB = 3072  # a daemon past this is killed: the machine is shared
REPLY_TIMEOUT_S = 60.0
ERROR_REPLY_LIMIT = 64 << 10
MAX_PARAMS_DEPTH = 64
WIRE_INT_MAX = 2**31 - 1
SEED = 17
NOTIFICATIONS = {
    "initialized", "exit", "textDocument/didOpen", "textDocument/didChange",
    "textDocument/didClose", "textDocument/didSave", "$/cancelRequest",
    "window/workDoneProgress/cancel",
}  # fmt: skip
FRESH = {"initialize", "shutdown", "exit"}  # each case on a connection of its own
SERVER_TO_CLIENT = {"budget/didChange", "session/didCompact", "session/summarize", "$/progress",
                    "window/logMessage"}  # fmt: skip
FREE_FORM = {"input", "initializationOptions", "capabilities", "tools", "examples"}
"""Fields whose contents are any JSON (a tool's input, a provider's tool definitions)."""
ALSO = {"workDoneToken": int}  # a ProgressToken: a string or an integer


def _nested(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def _words(size: int) -> bytes:
    """A JSON string of `size` bytes of words (one repeated character would mostly measure the
    tokenizer: 8 MB of "e" takes it 17 s)."""
    text = b"the quick brown fox jumps over the lazy dog 0123456789 "
    return b'"' + (text * (size // len(text) + 1))[:size] + b'"'


BIG = ("1 MB string", "8 MB string")  # run last, after every other value
BAD_VALUES: list[tuple[str, bytes]] = [
    ("null", b"null"), ("true", b"true"), ("false", b"false"), ("0", b"0"), ("-1", b"-1"),
    ("2^63", b"9223372036854775808"), ("1e308", b"1e308"), ("NaN", b"NaN"),
    ("Infinity", b"Infinity"), ('""', b'""'), ("1 MB string", _words(1 << 20)),
    ("8 MB string", _words(8 << 20)), ("NUL", b'"a\\u0000b"'),
    ("lone surrogate", b'"\\ud800"'), ("RTL and emoji", '"\u202eשלום 😀 \u200f"'.encode()),
    ("[]", b"[]"), ("{}", b"{}"), ("nested 62", _nested(62)), ("nested 1,000", _nested(1000)),
]  # fmt: skip
ALWAYS_NONSENSE = {"NaN", "Infinity", "lone surrogate"}
_SENT = {name: json.loads(raw if len(raw) < 4096 else b'""') for name, raw in BAD_VALUES}


@dataclass(frozen=True)
class Call:
    method: str
    params: Any

    @property
    def notification(self) -> bool:
        return self.method in NOTIFICATIONS


@dataclass(frozen=True)
class Case:
    call: Call
    path: tuple[str | int, ...]  # () is params itself
    value: str

    def body(self, msg_id: int) -> bytes:
        marker = "@@fuzz@@"
        params = _replaced(self.call.params, self.path, marker)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": self.call.method, "params": params}
        if not self.call.notification:
            message["id"] = msg_id
        text = json.dumps(message).encode()
        return text.replace(json.dumps(marker).encode(), dict(BAD_VALUES)[self.value], 1)

    def nonsense_if_accepted(self) -> bool:
        """Whether a result for this case means the daemon took nonsense."""
        if self.value in ALWAYS_NONSENSE:
            return True
        if self.value.startswith("nested"):
            levels = int(self.value.split()[1].replace(",", ""))
            if len(self.path) + levels > MAX_PARAMS_DEPTH:
                return True
        if any(key in FREE_FORM for key in self.path):
            return False
        original = _at(self.call.params, self.path)
        if original is None or (not self.path and self.call.params is None):
            return False
        sent = _SENT[self.value]
        if sent is None:
            return False  # null may stand for an optional field left out
        if self.path and ALSO.get(str(self.path[-1])) is int and type(sent) is int:
            return not 0 <= sent <= WIRE_INT_MAX
        if isinstance(original, bool):
            return not isinstance(sent, bool)
        if isinstance(original, int):
            return not (isinstance(sent, int) and not isinstance(sent, bool)) or not (
                0 <= sent <= WIRE_INT_MAX
            )
        kinds = (str, dict, list)
        return any(isinstance(original, k) and not isinstance(sent, k) for k in kinds)


def _replaced(params: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(params))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def _at(params: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        params = params[key]
    return params


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*prefix, 0))


# -- what to call ---------------------------------------------------------------------------


def documented_methods() -> set[str]:
    """Every method and notification a client may send that protocol.md heads a section with."""
    text = (ROOT / "protocol.md").read_text()
    methods: set[str] = set()
    for heading in re.findall(r"^### (.*)$", text[: text.index("## Budgets")], re.M):
        names = re.findall(r"`([^`]+)`", heading)
        prefix = ""
        for name in names:
            if "/" in name:
                prefix = name.rsplit("/", 1)[0] + "/"
                methods.add(name)
            elif prefix:
                methods.add(prefix + name)
    methods -= SERVER_TO_CLIENT
    return methods | {"initialize", "initialized", "shutdown", "exit", "$/cancelRequest"}


def calls(session_id: str, message_ids: list[str], workspace: Path, ref: str) -> list[Call]:
    """protocol.md's example requests with this run's ids, and TEMPLATES for the rest."""
    text = (ROOT / "protocol.md").read_text()
    uri = workspace.as_uri()
    found: dict[str, Call] = {}
    for line in re.findall(r"^--> (\{.*\})$", text, re.M):
        message = json.loads(line)
        if message["method"] in found:
            continue
        params = _swap_ids(message.get("params"), session_id, message_ids, uri, ref)
        found[message["method"]] = Call(message["method"], params)
    if "session/compact" in found:  # prune: a summary would ask this client to write it
        found["session/compact"] = Call(
            "session/compact", {**found["session/compact"].params, "strategy": "prune",
                                "workDoneToken": "fuzz"})  # fmt: skip
    extra = _templates(session_id, message_ids, workspace)
    return [*found.values(), *(call for call in extra if call.method not in found or
                                call.method in {"session/append", "context/assemble"})]  # fmt: skip


def _swap_ids(value: Any, session_id: str, message_ids: list[str], uri: str, ref: str) -> Any:
    if isinstance(value, dict):
        return {k: _swap_ids(v, session_id, message_ids, uri, ref) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_ids(v, session_id, message_ids, uri, ref) for v in value]
    if isinstance(value, str):
        if re.fullmatch(r"01JD[0-9A-Z]{22}", value):
            return session_id if value.endswith(("B8C", "004")) else message_ids[0]
        if value.startswith("file:///home/me/project"):
            return uri + value.removeprefix("file:///home/me/project")
        if value.startswith("sha256:"):
            return ref
        if value.startswith("app/"):
            return "a.py"
    return value


def _templates(session_id: str, message_ids: list[str], workspace: Path) -> list[Call]:
    uri, file_uri, first = workspace.as_uri(), (workspace / "a.py").as_uri(), message_ids[0]
    doc = {"uri": file_uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    assistant = {
        "role": "assistant", "model": "gpt-4o", "durationMs": 120,
        "parts": [{"type": "toolCall", "callId": "call-fuzz", "name": "bash",
                   "input": {"command": "ls"}}],
        "usage": {"inputTokens": 10, "outputTokens": 5,
                  "iterations": [{"type": "message", "inputTokens": 10, "outputTokens": 5}]},
    }  # fmt: skip
    return [
        Call("initialize", {"processId": None, "rootUri": uri, "capabilities": {},
                            "clientInfo": {"name": "fuzz", "version": "1"},
                            "initializationOptions": {"session": "active"},
                            "workspaceFolders": [{"uri": uri, "name": "ws"}]}),
        Call("initialized", {}),
        Call("shutdown", None),
        Call("exit", None),
        Call("session/append", {"sessionId": session_id, "message": assistant}),
        Call("context/assemble", {"sessionId": session_id, "format": "anthropic",
                                  "tools": [{"name": "bash"}],
                                  "readOnlyFiles": [{"path": "a.py", "text": "x = 1"}],
                                  "budgetInjection": "off"}),
        Call("session/reload", {"sessionId": session_id}),
        Call("session/handoff", {"sessionId": session_id, "goal": "finish the fuzz"}),
        Call("follow/start", {"agent": "claude-code", "path": str(workspace / "none.jsonl")}),
        Call("follow/list", None),
        Call("follow/stop", {"followerId": "f-none"}),
        Call("files/drop", {"sessionId": session_id, "paths": ["a.py"]}),
        Call("checkpoint/list", {"sessionId": session_id}),
        Call("checkpoint/diff", {"sessionId": session_id, "messageId": first, "path": "a.py"}),
        Call("checkpoint/restore", {"sessionId": session_id, "toMessageId": first,
                                    "dryRun": True}),
        Call("textDocument/didOpen", {"textDocument": doc}),
        Call("textDocument/didChange", {"textDocument": {"uri": file_uri, "version": 2},
                                        "contentChanges": [{"text": "x = 2\n"}]}),
        Call("textDocument/didSave", {"textDocument": {"uri": file_uri}, "text": "x = 2\n"}),
        Call("textDocument/didClose", {"textDocument": {"uri": file_uri}}),
        Call("$/cancelRequest", {"id": 99}),
        Call("window/workDoneProgress/cancel", {"token": "fuzz"}),
    ]  # fmt: skip


def uncovered(all_calls: list[Call]) -> set[str]:
    return documented_methods() - {call.method for call in all_calls}


def cases(all_calls: list[Call], per_call: int | None = None) -> list[Case]:
    """Every (call, field, bad value) in a fixed shuffled order, the big strings last (1 MB, then
    8 MB); `per_call`: a sample of that many per call."""
    rng = random.Random(SEED)
    chosen: list[Case] = []
    for call in all_calls:
        mine = [Case(call, path, name) for path in _paths(call.params) for name, _ in BAD_VALUES]
        chosen += rng.sample(mine, min(per_call, len(mine))) if per_call else mine
    rng.shuffle(chosen)
    return sorted(chosen, key=lambda case: BIG.index(case.value) + 1 if case.value in BIG else 0)


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
                error = {"code": -32601, "message": "the fuzz client answers nothing"}
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
        began = time.perf_counter()
        try:
            _one(target, case, label, outcome)
            took = (time.perf_counter() - began) * 1000
            outcome.slowest = sorted([*outcome.slowest, (took, label)], reverse=True)[:5]
        except EOFError:
            if case.call.method not in FRESH:
                outcome.closed.append(label)
                conn = _connect(sock_path)
        except TimeoutError:
            outcome.timeouts.append(label)
            break  # the daemon is stuck: what follows would only wait behind it
        finally:
            if target is not conn:
                target.close()
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
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    while not stop.is_set():
        began = time.perf_counter()
        msg_id = client.start_request("budget/snapshot", {"sessionId": session_id})
        while not stop.is_set():
            if client.buffer or select.select([client.read_fd], [], [], 0.5)[0]:
                if client.read().get("id") == msg_id:
                    break
        samples.append((time.perf_counter() - began) * 1000)
    print(json.dumps(samples), flush=True)


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
            waits = json.loads(prober.stdout.readline() or "[]")
        except ValueError:
            waits = []
        prober.kill()
        time.sleep(1.0)
        rss_after = _rss_mib(daemon.pid) if daemon.poll() is None else float("nan")
        return {
            "outcome": outcome, "waits": waits, "rss_before": rss_before, "rss_small": small[0],
            "rss_after": rss_after, "rss_peak": peak[0], "uncovered": uncovered(all_calls),
            "killed": killed.is_set(),
        }  # fmt: skip
    finally:
        killed.set()
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


# -- unauthenticated TCP clients --------------------------------------------------------------

PRE_AUTH_LEVELS = 42_000  # objects this deep fill a frame just under the 256 KiB limit
INTRUDERS = 3
ROUND_TRIPS = 2000
ROUND_TRIPS_MAX_S = 60.0  # a daemon that slows them down this much gets fewer


def worst_frame() -> bytes:
    """The costliest frame the pre-authentication limit let through before: an `initialize`
    whose params nest objects 42,000 levels deep, no id (the scan for one read it all)."""
    deep = b'{"a":' * PRE_AUTH_LEVELS + b"1" + b"}" * PRE_AUTH_LEVELS
    body = b'{"jsonrpc":"2.0","method":"initialize","params":%s}' % deep
    assert len(body) < 256 << 10
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def intrude(port: str) -> None:
    """Send worst_frame() on a new TCP connection, again and again, until stdin closes; prints
    how many were sent."""
    frame, sent = worst_frame(), 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", int(port))) as sock:
                sock.sendall(frame)
                while sock.recv(1 << 16):
                    pass
            sent += 1
        except OSError:
            time.sleep(0.01)
    print(sent, flush=True)


def _tcp_client(port: int, token: str) -> Any:
    from bench.daemon import _Client

    sock = socket.create_connection(("127.0.0.1", port))
    client = _Client(sock.fileno(), sock.fileno(), sock)
    params = {"processId": None, "capabilities": {}, "clientInfo": {"name": "good"},
              "initializationOptions": {"authToken": token}}  # fmt: skip
    client.request("initialize", params)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return client


def pre_auth_daemon(server_dir: Path) -> dict[str, Any]:
    """An authenticated TCP client's `budget/snapshot` round trips, idle and while INTRUDERS
    unauthenticated clients send worst_frame() over and over."""
    base = Path(tempfile.mkdtemp(prefix="tkpa-"))
    env = {**_env(base), "PYTHONPATH": str(server_dir)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    intruders: list[subprocess.Popen[str]] = []
    try:
        daemon = procs.tokend("serve", "--listen", f"unix:{sock}", "--listen", "tcp:127.0.0.1:0",
                              "--idle-timeout", "0")  # fmt: skip
        log = procs.log_path(0, "serve")
        deadline = time.monotonic() + 30
        while "tokend: ready" not in (text := log.read_text(errors="replace")):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tokend serve did not start: {text}")
            time.sleep(0.02)
        port = int(text.split("tcp:127.0.0.1:")[1].split()[0].rstrip(","))
        token = (base / "run" / "tokend" / "token").read_text().strip()
        good = _tcp_client(port, token)
        session_id = good.request("session/create", {"model": "gpt-4o"})["sessionId"]

        def round_trips() -> list[float]:
            samples: list[float] = []
            ends = time.monotonic() + ROUND_TRIPS_MAX_S
            while len(samples) < ROUND_TRIPS and time.monotonic() < ends:
                began = time.perf_counter()
                good.request("budget/snapshot", {"sessionId": session_id})
                samples.append((time.perf_counter() - began) * 1000)
            return samples

        round_trips()  # warm-up
        idle = round_trips()
        for _ in range(INTRUDERS):
            intruders.append(subprocess.Popen(
                [sys.executable, "-m", "bench.fuzz", "intrude", str(port)], cwd=ROOT,
                env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{server_dir}"},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))  # fmt: skip
        for intruder in intruders:
            assert intruder.stdout is not None
            intruder.stdout.readline()
        time.sleep(1.0)
        attacked = round_trips()
        frames = 0
        for intruder in intruders:
            assert intruder.stdin is not None and intruder.stdout is not None
            intruder.stdin.close()
            frames += int(intruder.stdout.readline() or 0)
        good.close()
        return {"idle": idle, "attacked": attacked, "frames": frames}
    finally:
        for intruder in intruders:
            intruder.kill()
            intruder.wait()
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


# -- the section ---------------------------------------------------------------------------------


def run() -> str:
    ours = fuzz_daemon(ROOT / "server", None, FUZZ_BUDGET_S)
    ours_pre = pre_auth_daemon(ROOT / "server")
    runs = [("tokend", ours, ours_pre)]
    with baseline_tree(BEFORE_TRUST_REV) as tree:
        if tree is not None:
            before = fuzz_daemon(tree / "server", None, FUZZ_BUDGET_S)
            runs.append((f"before ({BEFORE_TRUST_REV})", before, pre_auth_daemon(tree / "server")))
    return _section(runs)


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
        f"daemon and the one before the trust work ({BEFORE_TRUST_REV}).\n",
        "| daemon | cases run | tracebacks | nonsense accepted | largest error reply | "
        "connections closed | stuck on | good connection: p50 / p99 / max wait | RSS before "
        "→ after the small values → after all (peak) |",
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
            f"{r['rss_before']:.0f} → {r['rss_small']:.0f} → {r['rss_after']:.0f} "
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
            "RSS after the small values <= before + 20 MB",
            ours["rss_small"] - ours["rss_before"] <= 20,
        ),
        ("RSS after all <= before + 20 MB", ours["rss_after"] - ours["rss_before"] <= 20),
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
    lines += [
        "",
        f"{INTRUDERS} unauthenticated TCP clients, each sending over and over the worst frame the "
        f"pre-authentication limit allows (an `initialize` nesting objects {PRE_AUTH_LEVELS:,} "
        "levels deep, just under 256 KiB, no id), while an authenticated TCP client sends "
        f"{ROUND_TRIPS:,} `budget/snapshot` back to back, or as many as {ROUND_TRIPS_MAX_S:.0f} s "
        f"allow (after {ROUND_TRIPS:,} idle):\n",
        "| daemon | idle p50 / p99 / max | attacked: round trips, p50 / p99 / max | "
        "p99 attacked / idle | frames the intruders sent |",
        "|---|---|---|---:|---:|",
    ]
    for name, _, pre in runs:
        idle, hit = pre["idle"], pre["attacked"]
        lines.append(
            f"| {name} | {_p(idle, 50):.2f} / {_p(idle, 99):.2f} / {max(idle):.1f} ms | "
            f"{len(hit):,}, {_p(hit, 50):.2f} / {_p(hit, 99):.2f} / {max(hit):.1f} ms | "
            f"{_p(hit, 99) / _p(idle, 99):.2f}x | {pre['frames']:,} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "probe":
        probe(argv[1])
    elif argv and argv[0] == "intrude":
        intrude(argv[1])
    else:
        print(run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
