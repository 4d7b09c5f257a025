"""The status-line bench's shared parts (bench/statusline.py's section and
bench/statusline_codex.py's rows): a tokend home per tree, timed calls, the floor, follow latency."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.baseline import ROOT

DATA = ROOT.parent / "shared" / "data" / "claude-code-sessions"
BIG = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
WARM_CALLS = 25
COLD_TRIALS = {"ours": 20, "base": 20}  # the issue: median and max over 20 calls or more
CCUSAGE = "ccusage@20.0.24"  # the newest release whose linux-x64 native binary is published
REFRESH_S = 0.3
LATENCY_CALLS = 20
BASELINE = "2c3728f"  # main before the one-request status line and the early follower
ENTRY_POINT = "import sys; from tokend.cli import main; sys.exit(main())"  # the console script
CLAUDE_FIGURES = {
    "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
    "cost": {
        "total_cost_usd": 11.85,
        "total_duration_ms": 4_440_000,
        "total_api_duration_ms": 1_800_000,
        "total_lines_added": 120,
        "total_lines_removed": 30,
    },
    "version": "2.1.39",
    "output_style": {"name": "default"},
    "context_window": {  # every field Claude Code 2.1 passes (ccusage requires them all)
        "total_input_tokens": 77_334,
        "total_output_tokens": 500,
        "context_window_size": 200_000,
        "used_percentage": 38.7,
        "remaining_percentage": 61.3,
        "current_usage": {
            "input_tokens": 3,
            "output_tokens": 500,
            "cache_creation_input_tokens": 1000,
            "cache_read_input_tokens": 76_331,
        },
    },
}


class _Tree:
    """One tree's tokend in private folders (a fresh set for each `fresh()`)."""

    def __init__(self, name: str, server: Path, rollout: Path | None = None) -> None:
        self.name = name
        self.server = server
        self.rollout = rollout  # a Codex sessions folder copied into each home
        self.base = Path(tempfile.mkdtemp(prefix=f"tksl-{name}-"))
        self.count = 0
        self.env: dict[str, str] = {}
        self.fresh()

    def fresh(self) -> None:
        self.count += 1
        home = self.base / str(self.count)
        (home / "run").mkdir(parents=True, mode=0o700)
        projects = home / "claude" / "projects" / "p"
        projects.mkdir(parents=True)
        for source in DATA.glob("*.jsonl"):
            shutil.copy(source, projects / source.name)
        if self.rollout is not None:  # the generated Codex rollout (bench/codex_sample.py)
            shutil.copytree(self.rollout, home / "codex" / "sessions")
        self.home, self.projects = home, projects
        self.env = {
            **os.environ,
            "PYTHONPATH": str(self.server),
            "XDG_RUNTIME_DIR": str(home / "run"),
            "CLAUDE_CONFIG_DIR": str(home / "claude"),
            "CODEX_HOME": str(home / "codex"),
            "TOKEND_DATABASE_URL": f"sqlite:///{home}/tokend.sqlite3",
        }
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tokend has its bytecode
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            self.env[var] = str(home / var.lower())

    def stdin(self, transcript: Path) -> str:
        return json.dumps(
            {
                "session_id": transcript.stem,
                "transcript_path": str(transcript),
                "cwd": str(self.home),
                "workspace": {"current_dir": str(self.home), "project_dir": str(self.home)},
                **CLAUDE_FIGURES,
            }
        )

    def statusline(
        self, stdin: str, entry: bool = False, args: tuple[str, ...] = ()
    ) -> tuple[float, str]:
        """(wall ms, line) of one call: `python -m tokend statusline ARGS`, or with `entry` as
        the `tokend` console script runs it."""
        how = ["-c", ENTRY_POINT] if entry else ["-m", "tokend"]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, *how, "statusline", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=600,
        )
        return (time.perf_counter() - started) * 1000, done.stdout.strip()

    def status(self, *args: str) -> tuple[float, str]:
        """(wall ms, output) of `tokend status ARGS` as the console script runs it."""
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", ENTRY_POINT, "status", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.home,
            timeout=600,
        )
        return (time.perf_counter() - started) * 1000, done.stdout.strip()

    def session_id(self) -> str:
        """The first session the daemon lists (every workspace's)."""
        done = subprocess.run(
            [sys.executable, "-m", "tokend", "sessions", "--all-workspaces", "--json"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=600,
        )
        return str(json.loads(done.stdout)["sessions"][0]["sessionId"])

    def serve(self) -> subprocess.Popen[bytes]:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "tokend", "serve", "--idle-timeout", "0"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        sock = self.home / "run" / "tokend" / "daemon.sock"
        deadline = time.monotonic() + 60
        while not sock.exists():
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: the daemon did not start")
            time.sleep(0.05)
        return daemon

    def stop(self) -> None:
        """Stop this home's daemon (started by the test or by the command) by its pid."""
        for pid in _pids_with(str(self.home)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        deadline = time.monotonic() + 30
        while _pids_with(str(self.home)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in _pids_with(str(self.home)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _renamed_copy(folder: Path, tag: str) -> Path:
    """The big transcript as another Claude Code session (its session id replaced), so the
    daemon has never seen it: a first read, as for a session the user just started."""
    new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, tag))
    target = folder / f"{new_id}.jsonl"
    target.write_text((DATA / BIG).read_text().replace(BIG.removesuffix(".jsonl"), new_id))
    return target


def _pids_with(marker: str) -> list[int]:
    """Processes whose environment names `marker` (this bench's own daemons and followers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ and b"tokend" in (entry / "cmdline").read_bytes():
            found.append(int(entry.name))
    return found


def _until_tokend(tree: _Tree, stdin: str, since: float, args: tuple[str, ...] = ()) -> float:
    """Milliseconds from `since` until a refresh shows tokend's own figure."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        _, line = tree.statusline(stdin, args=args)
        if "compacts at" in line:
            return (time.perf_counter() - since) * 1000
        time.sleep(REFRESH_S)
    raise RuntimeError(f"{tree.name}: no tokend line within 300 s")


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 30 s: a daemon that does not exit must not hold the run."""
    daemon.terminate()
    try:
        daemon.wait(30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def _floor() -> float:
    """One call of the floor, `python -S -c pass`, in ms."""
    return _times([sys.executable, "-S", "-c", "pass"], 1)[0]


def _times(
    args: list[str], calls: int, stdin: str = "", env: dict[str, str] | None = None
) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(args, input=stdin, capture_output=True, text=True, env=env)
        out.append((time.perf_counter() - started) * 1000)
    return out


def _measure(tree: _Tree, trials: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    daemon = tree.serve()
    try:
        stdin = tree.stdin(tree.projects / BIG)
        _until_tokend(tree, stdin, time.perf_counter())
        figures["line"] = tree.statusline(stdin)[1]
        figures["warm"], figures["entry"], figures["floor"] = [], [], []
        for _ in range(WARM_CALLS):  # interleaved with the floor: the load falls on all alike
            figures["floor"].append(_floor())
            figures["warm"].append(tree.statusline(stdin)[0])
            figures["entry"].append(tree.statusline(stdin, entry=True)[0])
        session = tree.session_id()
        figures["status"], figures["status_json"], figures["status_floor"] = [], [], []
        figures["status_line"] = tree.status("--session", session)[1]
        for _ in range(WARM_CALLS):  # `tokend status`, its --json and the floor, interleaved
            figures["status"].append(tree.status("--session", session)[0])
            figures["status_json"].append(tree.status("--session", session, "--json")[0])
            figures["status_floor"].append(_floor())
        new, reach, floor = [], [], []
        for i in range(trials):
            copy = _renamed_copy(tree.projects, f"copy-{i}")
            floor.append(_floor())
            started = time.perf_counter()
            elapsed, _ = tree.statusline(tree.stdin(copy))
            new.append(elapsed)
            reach.append(_until_tokend(tree, tree.stdin(copy), started))
        figures["new"], figures["new_reach"], figures["new_floor"] = new, reach, floor
    finally:
        _stop(daemon)
        tree.stop()
    tree.fresh()  # a daemon that never saw this Claude session: the latency transcript is new
    daemon = tree.serve()
    try:
        source = _renamed_copy(tree.projects, "latency").read_text().splitlines()
        figures["latency"] = follow_latency(
            tree, "claude-code", source, tree.projects / "latency.jsonl"
        )
    finally:
        _stop(daemon)
        tree.stop()
    cold, reach, floor = [], [], []
    for _ in range(trials):
        tree.fresh()
        stdin = tree.stdin(tree.projects / BIG)
        floor.append(_floor())
        started = time.perf_counter()
        elapsed, _ = tree.statusline(stdin)
        cold.append(elapsed)
        reach.append(_until_tokend(tree, stdin, started))
        tree.stop()
    figures["cold"], figures["cold_reach"], figures["cold_floor"] = cold, reach, floor
    return figures


def _ends_a_call(agent: str, lines: list[str], i: int) -> bool:
    """Whether record `i` is the last record of a provider call: Claude Code's last assistant
    record of a response, Codex's token_count with usage."""
    record = json.loads(lines[i])
    if agent == "codex":
        payload = record.get("payload") or {}
        return payload.get("type") == "token_count" and payload.get("info") is not None
    return record.get("type") == "assistant" and (
        i + 1 >= len(lines) or json.loads(lines[i + 1]).get("type") != "assistant"
    )


def follow_latency(
    tree: _Tree, agent: str, source: list[str], path: Path, start_s: float = 300
) -> list[float]:
    """Write `source`'s provider calls one at a time into `path`, followed from its first half;
    ms from the write of each call's records to the budget/didChange that counts that call.
    RuntimeError when follow/start is not answered within `start_s`."""
    lines = [ln for ln in source if ln.strip()]
    head = len(lines) // 2
    path.write_text("\n".join(lines[:head]) + "\n")
    client = _Listener(tree.home / "run" / "tokend" / "daemon.sock")
    client.reply(client.send("initialize", {"processId": None, "capabilities": {}}))
    client.send("initialized", {}, request=False)
    client.reply(client.send("follow/start", {"agent": agent, "path": str(path)}), start_s)
    latencies: list[float] = []
    calls = 0
    i = head
    with path.open("a") as out:
        while i < len(lines) and len(latencies) < LATENCY_CALLS:
            chunk = []  # the records up to and including the next one that closes a call
            while i < len(lines):
                chunk.append(lines[i])
                i += 1
                if _ends_a_call(agent, lines, i - 1):
                    break
            out.write("\n".join(chunk) + "\n")
            out.flush()
            started = time.perf_counter()
            deadline = started + 30
            while time.perf_counter() < deadline:
                message = client.read(max(0.01, deadline - time.perf_counter()))
                if message and message.get("method") == "budget/didChange":
                    seen = message["params"]["snapshot"]["totals"]["calls"]
                    if seen > calls:
                        if calls:
                            latencies.append((time.perf_counter() - started) * 1000)
                        calls = seen
                        break
    client.close()
    return latencies


class _Listener:
    """A connection to the daemon that sends requests and reads every message it is sent."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.buffer = bytearray()
        self.ids = iter(range(1, 1 << 30))

    def send(self, method: str, params: Any, request: bool = True) -> int | None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        msg_id = next(self.ids) if request else None
        if request:
            body["id"] = msg_id
        data = json.dumps(body).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        return msg_id

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None after `timeout` seconds without a whole one."""
        deadline = time.monotonic() + timeout
        while True:
            head = self.buffer.find(b"\r\n\r\n")
            if head >= 0:
                fields = dict(
                    line.split(":", 1)
                    for line in self.buffer[:head].decode().split("\r\n")
                    if ":" in line
                )
                length = int(next(v for k, v in fields.items() if k.lower() == "content-length"))
                if len(self.buffer) >= head + 4 + length:
                    body = bytes(self.buffer[head + 4 : head + 4 + length])
                    del self.buffer[: head + 4 + length]
                    return dict(json.loads(body))
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the daemon closed the connection")
            self.buffer.extend(chunk)

    def reply(self, msg_id: int | None, limit_s: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + limit_s
        while True:
            message = self.read(max(0.0, deadline - time.monotonic()))
            if message is None:
                raise RuntimeError(f"no answer within {limit_s:g} s")
            if message.get("id") == msg_id and "method" not in message:
                return message

    def close(self) -> None:
        self.sock.close()
