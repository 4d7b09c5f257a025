"""The real tokend daemon: what one shared daemon costs an editor, against the stdio server.

Measured in one run, every process a real `python -m tokend ...` on a private temp dir:
  stdio        `tokend lsp --standalone` on a pipe (the baseline: no daemon at all)
  unix socket  a client on the socket of `tokend serve`
  forwarder    the editor's real path: pipe -> `tokend lsp` -> socket -> daemon
Then `budget/didChange` fanned out to 8 clients attached to one session while a 9th appends,
and the RSS of the daemon (idle, then with 10 loaded sessions) beside the stdio server's.

`python -m bench.daemon` prints the section.
"""

from __future__ import annotations

import json
import os
import random
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODEL = "gpt-4o"
ROUND_TRIPS = 2000  # per path, in ROUND_TRIP_BLOCKS interleaved blocks
ROUND_TRIP_BLOCKS = 4
WARMUP = 200
FANOUT_CLIENTS = 8
FANOUT_ROUNDS = 200
FANOUT_WARMUP = 20
LOADED_SESSIONS = 10
NEW_CONNECTIONS = 200  # connect + initialize, after NEW_CONNECTIONS_WARMUP
NEW_CONNECTIONS_WARMUP = 20
SERVERS_BUILT = 300  # create_server in this process, each way
MESSAGES_PER_SESSION = 200
READ_TIMEOUT_S = 30.0

_WORDS = (
    "the build fails because config parser returns none when the workspace file is missing so "
    "we add a default and a test that covers the empty case then rerun the suite def class "
    "import return async await error traceback line module function value token window"
).split()


# -- a minimal blocking LSP client -------------------------------------------------------------


class _Client:
    """JSON-RPC over LSP framing on a pair of fds (a socket, or a child's pipes)."""

    def __init__(self, read_fd: int, write_fd: int, keep: Any) -> None:
        self.read_fd, self.write_fd, self.keep = read_fd, write_fd, keep
        self.buffer = bytearray()  # grows in place: a 2.6 MB reply is copied once
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        view = memoryview(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        while view:
            view = view[os.write(self.write_fd, view) :]

    def read(self) -> dict[str, Any]:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                header = self.buffer[:end].lower()
                length = int(header.split(b"content-length:")[1].split(b"\r\n")[0])
                if len(self.buffer) >= end + 4 + length:
                    body = bytes(self.buffer[end + 4 : end + 4 + length])
                    del self.buffer[: end + 4 + length]
                    return json.loads(body)
            if not select.select([self.read_fd], [], [], READ_TIMEOUT_S)[0]:
                raise TimeoutError(f"no message from the server in {READ_TIMEOUT_S:.0f} s")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buffer += chunk

    def start_request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def reply(self, request_id: int) -> Any:
        """The result of `request_id`; notifications that arrive first are skipped."""
        while (message := self.read()).get("id") != request_id:
            pass
        if "error" in message:
            raise RuntimeError(f"tokend answered an error: {message['error']}")
        return message.get("result")

    def request(self, method: str, params: Any = None) -> Any:
        return self.reply(self.start_request(method, params))

    def initialize(self, name: str) -> None:
        self.request(
            "initialize",
            {"processId": None, "rootUri": None, "capabilities": {}, "clientInfo": {"name": name}},
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def close(self) -> None:
        if isinstance(self.keep, socket.socket):
            self.keep.close()
            return
        self.keep.stdin.close()
        try:
            self.keep.wait(10)
        except subprocess.TimeoutExpired:
            self.keep.kill()
            self.keep.wait()


def _unix_client(path: Path, name: str) -> _Client:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    client = _Client(sock.fileno(), sock.fileno(), sock)
    client.initialize(name)
    return client


# -- processes ---------------------------------------------------------------------------------


class _Processes:
    """Every process this bench starts; `stop_all` ends each one by its PID."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.base, self.env = base, env
        self.started: list[subprocess.Popen[bytes]] = []

    def log_path(self, index: int, command: str) -> Path:
        return self.base / f"{command}-{index}.err"

    def tokend(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with open(self.log_path(len(self.started), args[0]), "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend", *args],
                env=env or self.env,
                cwd=self.base,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self.started.append(proc)
        return proc

    def stdio_client(self, *args: str, env: dict[str, str] | None = None) -> _Client:
        proc = self.tokend(*args, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        client = _Client(proc.stdout.fileno(), proc.stdin.fileno(), proc)
        client.initialize(" ".join(args))
        return client

    def daemon(self, sock: Path) -> subprocess.Popen[bytes]:
        """`tokend serve` on `sock`, once it says it is ready."""
        return self.serve("--listen", f"unix:{sock}", "--idle-timeout", "300")[0]

    def serve(self, *args: str) -> tuple[subprocess.Popen[bytes], str]:
        """`tokend serve ARGS`, once it says it is ready; with what it had logged by then
        (the addresses it listens on)."""
        proc = self.tokend("serve", *args)
        log = self.log_path(len(self.started) - 1, "serve")
        deadline = time.monotonic() + 30
        while "tokend: ready" not in (text := log.read_text(errors="replace")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tokend serve did not start: {text}")
            time.sleep(0.02)
        return proc, text

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the daemon removes its socket on SIGTERM
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- measurements ------------------------------------------------------------------------------


def _messages(seed: int, count: int = MESSAGES_PER_SESSION) -> list[dict[str, Any]]:
    """`count` user/assistant text messages of 20-150 words each (the same for a seed)."""
    rng = random.Random(seed)
    return [
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "parts": [
                {"type": "text", "text": " ".join(rng.choices(_WORDS, k=rng.randint(20, 150)))}
            ],
        }
        for n in range(count)
    ]


def _load_session(client: _Client, seed: int) -> tuple[str, list[float]]:
    """A new session with MESSAGES_PER_SESSION messages; (its id, append round trips in ms)."""
    session_id = client.request("session/create", {"model": MODEL})["sessionId"]
    samples = []
    for message in _messages(seed):
        started = time.perf_counter()
        client.request("session/append", {"sessionId": session_id, "message": message})
        samples.append((time.perf_counter() - started) * 1000)
    return session_id, samples


def _snapshot_round_trips(paths: dict[str, tuple[_Client, str]]) -> dict[str, list[float]]:
    """`budget/snapshot` round trips per path, interleaved in blocks so noise hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for client, session_id in paths.values():
        for _ in range(WARMUP):
            client.request("budget/snapshot", {"sessionId": session_id})
    for _ in range(ROUND_TRIP_BLOCKS):
        for name, (client, session_id) in paths.items():
            params = {"sessionId": session_id}
            for _ in range(ROUND_TRIPS // ROUND_TRIP_BLOCKS):
                started = time.perf_counter()
                client.request("budget/snapshot", params)
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def _fanout_ms(sock: Path) -> tuple[list[float], list[float], list[float]]:
    """8 clients attached to one session, a 9th appends: per append (each delivery, the last
    delivery, the appender's reply), in ms from sending the append."""
    sender = _unix_client(sock, "fanout-sender")
    session_id = sender.request("session/create", {"model": MODEL})["sessionId"]
    listeners = [_unix_client(sock, f"fanout-{n}") for n in range(FANOUT_CLIENTS)]
    for listener in listeners:
        listener.request("session/attach", {"sessionId": session_id})
    by_fd = {listener.read_fd: listener for listener in listeners}
    each_ms, last_ms, reply_ms = [], [], []
    for round_number, message in enumerate(_messages(99, FANOUT_ROUNDS + FANOUT_WARMUP)):
        started = time.perf_counter()
        request_id = sender.start_request(
            "session/append", {"sessionId": session_id, "message": message}
        )
        pending, arrivals = set(by_fd), []
        while pending:
            ready = select.select(list(pending), [], [], READ_TIMEOUT_S)[0]
            if not ready:
                raise TimeoutError("an attached client got no budget/didChange")
            for fd in ready:
                note = by_fd[fd].read()
                arrivals.append((time.perf_counter() - started) * 1000)
                assert note["method"] == "budget/didChange", note
                assert note["params"]["sessionId"] == session_id
                pending.discard(fd)
        version = sender.reply(request_id)["version"]
        replied = (time.perf_counter() - started) * 1000
        assert note["params"]["snapshot"]["version"] == version  # this append's snapshot
        if round_number >= FANOUT_WARMUP:
            each_ms.extend(arrivals)
            last_ms.append(max(arrivals))
            reply_ms.append(replied)
    for client in [*listeners, sender]:
        client.close()
    return each_ms, last_ms, reply_ms


def _new_connections_ms(sock: Path) -> list[float]:
    """connect + `initialize` round trips of new connections to the daemon (each closed)."""
    samples = []
    for n in range(NEW_CONNECTIONS_WARMUP + NEW_CONNECTIONS):
        started = time.perf_counter()
        client = _unix_client(sock, f"new-{n}")  # connects, initialize, initialized
        if n >= NEW_CONNECTIONS_WARMUP:
            samples.append((time.perf_counter() - started) * 1000)
        client.close()
    return samples


def _create_server_ms() -> dict[str, list[float]]:
    """create_server in this process, as the daemon runs it on its loop for every connection:
    as it is, and with its per-process caches emptied before each call (what every connection
    paid before they existed: pygls working out each handler's signature, the handler
    modules listed from disk)."""
    from tokend.adapters.checkpoint_store import CheckpointStore
    from tokend.lsp import server as lsp_server
    from tokend.service.app import open_app

    with tempfile.TemporaryDirectory(prefix="tkcs-") as tmp:
        # As the daemon's: a checkpointer too (each server hears of its settled restores).
        checkpoints = CheckpointStore(Path(tmp) / "checkpoints")
        app = open_app(None, f"sqlite:///{tmp}/bench.sqlite3", checkpoint_store=checkpoints)
        try:
            lsp_server.create_server(app)  # imports the handler modules once
            samples: dict[str, list[float]] = {"cached": [], "afresh": []}
            for _ in range(SERVERS_BUILT):
                for way in ("cached", "afresh"):  # interleaved: noise hits both alike
                    if way == "afresh":
                        lsp_server._signatures.clear()
                        lsp_server._handler_modules.cache_clear()
                    started = time.perf_counter()
                    lsp_server.create_server(app)
                    samples[way].append((time.perf_counter() - started) * 1000)
        finally:
            app.close()
    return samples


def _p(samples: list[float], q: int) -> float:
    if q == 50:
        return statistics.median(samples)
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def _env(base: Path) -> dict[str, str]:
    run_dir = base / "run"
    (run_dir / "tokend").mkdir(parents=True, mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    env.update(
        XDG_RUNTIME_DIR=str(run_dir),
        XDG_STATE_HOME=str(base / "state"),
        XDG_DATA_HOME=str(base / "data"),
        XDG_CONFIG_HOME=str(base / "config"),
        TOKEND_DATABASE_URL=f"sqlite:///{base / 'daemon.db'}",
        # A forwarder that cannot reach our daemon fails instead of starting an untracked one.
        TOKEND_DAEMON_CMD=shlex.join([sys.executable, "-c", "raise SystemExit(3)"]),
    )
    return env


def run() -> str:
    base = Path(tempfile.mkdtemp(prefix="tkdb-"))  # short: unix socket paths max ~104 bytes
    env = _env(base)
    sock = base / "run" / "tokend" / "daemon.sock"  # where `tokend lsp` looks for the daemon
    procs = _Processes(base, env)
    clients: list[_Client] = []
    try:
        daemon = procs.daemon(sock)
        time.sleep(0.5)
        daemon_idle = _rss_mib(daemon.pid)
        stdio = procs.stdio_client(
            "lsp", "--standalone", env={**env, "TOKEND_DATABASE_URL": f"sqlite:///{base / 's.db'}"}
        )
        clients.append(stdio)
        stdio_pid = stdio.keep.pid
        time.sleep(0.5)
        stdio_idle = _rss_mib(stdio_pid)

        sessions, daemon_appends = [], []
        for n in range(LOADED_SESSIONS):  # one connection attached to each (session/create)
            clients.append(_unix_client(sock, f"editor-{n}"))
            session_id, samples = _load_session(clients[-1], seed=n)
            sessions.append(session_id)
            daemon_appends += samples
            if n == 0:
                time.sleep(0.5)
                daemon_one = _rss_mib(daemon.pid)
        stdio_session, stdio_appends = _load_session(stdio, seed=0)
        time.sleep(0.5)
        daemon_loaded, stdio_loaded = _rss_mib(daemon.pid), _rss_mib(stdio_pid)
        status = clients[1].request("daemon/status")

        clients.append(_unix_client(sock, "bench-unix"))
        forwarder = procs.stdio_client("lsp")  # XDG_RUNTIME_DIR leads it to our daemon
        clients.append(forwarder)
        trips = _snapshot_round_trips(
            {
                "stdio": (stdio, stdio_session),
                "unix": (clients[-2], sessions[0]),
                "forwarder": (forwarder, sessions[0]),
            }
        )
        each_ms, last_ms, reply_ms = _fanout_ms(sock)
        new_ms = _new_connections_ms(sock)
    finally:
        for client in clients:
            try:
                client.close()
            except OSError:
                pass
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)

    rss = {
        "stdio_idle": stdio_idle,
        "stdio_loaded": stdio_loaded,
        "daemon_idle": daemon_idle,
        "daemon_one": daemon_one,
        "daemon_loaded": daemon_loaded,
    }
    latency = {
        "snapshot": trips,
        "append": {"stdio": stdio_appends, "unix": daemon_appends},
        "fanout": {"each": each_ms, "last": last_ms, "reply": reply_ms},
        "connect": {"new": new_ms, **_create_server_ms()},
    }
    counts = (len(status["sessions"]), len(status["connections"]))
    return _section(latency, rss, counts)


def _section(
    latency: dict[str, dict[str, list[float]]], rss: dict[str, float], counts: tuple[int, int]
) -> str:
    snap, append, fan = latency["snapshot"], latency["append"], latency["fanout"]
    connect = latency["connect"]
    snap_base, append_base = _p(snap["stdio"], 50), _p(append["stdio"], 50)
    unix_ok, fan_ok = _p(snap["unix"], 50) <= 1.0, _p(fan["each"], 99) <= 50.0
    words = "(20-150 words)"
    rows: list[tuple[str, list[float], float | None, str]] = [
        ("`budget/snapshot`, stdio pipe to `tokend lsp --standalone` (baseline)",
         snap["stdio"], snap_base, ""),
        ("`budget/snapshot`, unix socket to the daemon", snap["unix"], snap_base,
         f"p50 <= 1 ms: {'met' if unix_ok else '**missed**'}"),
        ("`budget/snapshot`, editor path: pipe -> `tokend lsp` forwarder -> daemon",
         snap["forwarder"], snap_base, ""),
        (f"`session/append` {words}, stdio standalone (baseline)", append["stdio"],
         append_base, ""),
        (f"`session/append` {words}, unix socket to the daemon", append["unix"], append_base, ""),
        (f"fan-out: append -> `budget/didChange` at each of {FANOUT_CLIENTS} attached clients "
         f"({len(fan['each']):,} deliveries)", fan["each"], None,
         f"p99 <= 50 ms: {'met' if fan_ok else '**missed**'}"),
        (f"fan-out: append -> the last of the {FANOUT_CLIENTS} has it", fan["last"], None, ""),
        ("fan-out: append -> the appender's reply", fan["reply"], None, ""),
        ("`create_server`, in-process, with pygls inspecting every handler afresh (before: "
         "every connection did)", connect["afresh"], _p(connect["afresh"], 50), ""),
        ("`create_server`, in-process, handlers' signatures worked out once per process (on the "
         "loop, per connection)", connect["cached"], _p(connect["afresh"], 50), ""),
        ("new connection: connect + `initialize` round trip, unix socket", connect["new"], None,
         ""),
    ]  # fmt: skip
    lines = [
        "### Daemon: round trips, fan-out and memory of the real `tokend serve`\n",
        "| measure | p50 | p99 | p50 vs baseline | goal |",
        "|---|---|---|---|---|",
    ]
    for name, samples, baseline, goal in rows:
        ratio = f"{_p(samples, 50) / baseline:.2f}x" if baseline else ""
        lines.append(
            f"| {name} | {_p(samples, 50):.3f} ms | {_p(samples, 99):.3f} ms | {ratio} | {goal} |"
        )
    n, sessions, connections = MESSAGES_PER_SESSION, *counts
    per_session = (rss["daemon_loaded"] - rss["daemon_one"]) / (LOADED_SESSIONS - 1)
    editors = LOADED_SESSIONS * rss["stdio_loaded"]
    lines += [
        "",
        "| process (VmRSS) | MiB |",
        "|---|---|",
        f"| `tokend lsp --standalone`, initialized, no session | {rss['stdio_idle']:.1f} |",
        f"| `tokend lsp --standalone`, 1 session x {n} messages | {rss['stdio_loaded']:.1f} |",
        f"| `tokend serve`, ready, no connection | {rss['daemon_idle']:.1f} "
        f"({rss['daemon_idle'] / rss['stdio_idle']:.2f}x stdio idle) |",
        f"| `tokend serve`, 1 session x {n} messages, 1 connection | {rss['daemon_one']:.1f} |",
        f"| `tokend serve`, {sessions} sessions x {n} messages, {connections} connections "
        f"attached | {rss['daemon_loaded']:.1f} ({per_session:+.2f} per session after the first) |",
        f"| {LOADED_SESSIONS} editors each on its own stdio server (estimate: "
        f"{LOADED_SESSIONS} x the loaded standalone) | {editors:.0f} "
        f"({editors / rss['daemon_loaded']:.1f}x the daemon) |",
        "",
        "How measured: real `python -m tokend` processes on a private temp dir (SQLite store, "
        f"XDG dirs), model `{MODEL}`, driven by one blocking client process. Round trips: "
        f"{ROUND_TRIPS:,} sequential `budget/snapshot` per path on a {n}-message session after "
        f"{WARMUP} warm-up, the 3 paths interleaved in {ROUND_TRIP_BLOCKS} blocks (pygls reads "
        "stdio through a thread pool, the daemon its sockets on the event loop: hence stdio is "
        f"the slower). Appends: the {LOADED_SESSIONS}x{n} load (daemon) and 1x{n} (stdio). "
        f"Fan-out: {FANOUT_ROUNDS} appends from a 9th connection after {FANOUT_WARMUP} warm-up, "
        "each delivery timed from the append's send (select over "
        f"{FANOUT_CLIENTS} unix sockets), the next append sent once all had it. RSS from "
        "/proc/PID/status 0.5 s after each phase; the first session pays for the o200k "
        f"vocabulary, later ones reuse freed memory. New connections: {NEW_CONNECTIONS} "
        f"after {NEW_CONNECTIONS_WARMUP}, one at a time, each closed before the next; "
        f"`create_server`: {SERVERS_BUILT} builds each way, interleaved, in the bench's own "
        "process (the daemon builds one per connection, on its event loop). The machine is "
        "shared and noisy: read "
        "medians and ratios.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
