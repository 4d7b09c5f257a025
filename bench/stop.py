"""Stops, and workspaces given back: the real `tokend serve` of this tree beside today's daemon.

Four django-sized workspaces (django's sdist, fetched with `pip download --no-binary :all:`,
unpacked four times; a generated tree of 4 x 6,900 Python files when pip cannot fetch it), one
client per workspace (`rootUri`), each with a session whose repo map it asks for.

- **maps built**: every `repoMap/get` answered, a file saved in each workspace (the watcher
  hands its batch over), then the daemon is stopped, TRIALS times with
  `tokend stop` and TRIALS times with SIGTERM: how long until the process is gone (polled in
  /proc; killed at KILL_AFTER_S), whether `tokend stop` returned only once it was gone, whether
  the log has a line of this pid after "daemon stopped", whether the store passes SQLite's
  integrity check.
- **first map building**: the same with a fresh workspace cache, stopped right after the
  `repoMap/get` requests were sent: and whether each got an answer before its connection closed.
- **resources**: watches (inotify `wd` lines in /proc/PID/fdinfo), threads and RSS of the daemon
  before any workspace is opened, with the four open, and 5 s after every client left.

`python -m bench.run stop` prints the section.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree

TRIALS = 5
WORKSPACES = 4
MODEL = "gpt-4o"
KILL_AFTER_S = 30.0
GOAL_S = 5.0
MAP_TIMEOUT_S = 600.0
SETTLE_S = 5.0


class _Client:
    def __init__(self, sock_path: Path, name: str, root: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(sock_path))
        self.buffer = b""
        self.next_id = 0
        self.closed = False
        params = {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {},
            "clientInfo": {"name": name},
        }
        self.request("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next message; None once the daemon closed the connection."""
        deadline = time.monotonic() + timeout
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                header = self.buffer[:end].lower()
                length = int(header.split(b"content-length:")[1].split(b"\r\n")[0])
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4 : end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length :]
                    return dict(json.loads(body))
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise TimeoutError("no message from the daemon in time")
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self.buffer += chunk

    def start(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def reply(self, request_id: int, timeout: float = 60.0) -> dict[str, Any] | None:
        """The whole reply message (result or error); None if the connection closed first."""
        while (message := self.read(timeout)) is not None:
            if message.get("id") == request_id and "method" not in message:
                return message
        return None

    def request(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        message = self.reply(self.start(method, params), timeout)
        if message is None or "error" in message:
            raise RuntimeError(f"{method}: {message}")
        return message.get("result")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _trees(base: Path) -> tuple[list[Path], str]:
    """WORKSPACES copies of django's sdist (or of a generated tree of its size)."""
    download = base / "sdist"
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
         "-d", str(download), "django"],
        capture_output=True,
    )  # fmt: skip
    archives = sorted(download.glob("*.tar.gz")) if got.returncode == 0 else []
    roots = []
    for i in range(WORKSPACES):
        root = base / f"ws{i}"
        root.mkdir()
        if archives:
            with tarfile.open(archives[0]) as tar:
                tar.extractall(root, filter="data")
        else:
            _generate(root, 6900)
        roots.append(root)
    return roots, archives[0].name if archives else "a generated tree of 6,900 files"


def _generate(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 60}" / f"sub{i % 9}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"def f_{i}_{j}(x):\n    return g_{(i + j) % 700}(x)\n" for j in range(20)]
        (folder / f"m{i}.py").write_text("".join(lines))


def _env(base: Path, server: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    (base / "run" / "tokend").mkdir(parents=True, mode=0o700, exist_ok=True)
    env.update(
        PYTHONPATH=str(server),
        XDG_RUNTIME_DIR=str(base / "run"),
        XDG_STATE_HOME=str(base / "state"),
        XDG_DATA_HOME=str(base / "data"),
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_CONFIG_HOME=str(base / "config"),
        TOKEND_DATABASE_URL=f"sqlite:///{base / 'daemon.sqlite3'}",
        TOKEND_DAEMON_CMD=shlex.join([sys.executable, "-c", "raise SystemExit(3)"]),
    )
    return env


def _start(base: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    err = open(base / "serve.err", "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokend", "serve", "--idle-timeout", "0"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while b"tokend: ready" not in (base / "serve.err").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((base / "serve.err").read_text())
        time.sleep(0.05)
    return proc


def _open_all(sock: Path, roots: list[Path], wait: bool) -> list[tuple[_Client, int]]:
    """A client per workspace, its session, its repoMap/get sent (and answered when `wait`)."""
    opened = []
    for i, root in enumerate(roots):
        client = _Client(sock, f"bench-stop-{i}", root)
        created = client.request("session/create", {"model": MODEL, "workspaceUri": root.as_uri()})
        opened.append((client, client.start("repoMap/get", {"sessionId": created["sessionId"]})))
    if wait:
        for client, request in opened:
            message = client.reply(request, MAP_TIMEOUT_S)
            if message is None or "error" in message:
                raise RuntimeError(f"repoMap/get: {message}")
    return opened


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")


def _stop_trial(base: Path, server: Path, roots: list[Path], how: str, building: bool) -> dict:
    env = _env(base, server)
    if building:  # a first map: nothing of the trees in the workspace cache
        for cache in (base / "data").rglob("workspace-cache.sqlite3*"):
            cache.unlink()
    proc = _start(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    opened = _open_all(sock, roots, wait=not building)
    if building:
        time.sleep(1.0)  # the walks are done, the tags being read
    else:  # an editor saves a file in each workspace: the watcher has a batch for its hooks
        for root in roots:
            (root / "bench_saved.py").write_text(f"SAVED = {time.time()}\n")
        time.sleep(0.5)
    begun = time.monotonic()
    stop_cmd: subprocess.Popen[bytes] | None = None
    if how == "tokend stop":
        stop_cmd = subprocess.Popen(
            [sys.executable, "-m", "tokend", "stop"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    else:
        proc.send_signal(signal.SIGTERM)
    gone_at = returned_at = None
    gone_when_returned = None
    killed = False
    while gone_at is None or (stop_cmd is not None and returned_at is None):
        now = time.monotonic()
        if gone_at is None and (proc.poll() is not None or _gone(proc.pid)):
            gone_at = now
        if stop_cmd is not None and returned_at is None and stop_cmd.poll() is not None:
            returned_at = now
            gone_when_returned = proc.poll() is not None or _gone(proc.pid)
        if gone_at is None and now - begun > KILL_AFTER_S:
            proc.kill()
            killed = True
        if now - begun > KILL_AFTER_S + 30:
            break
        time.sleep(0.01)
    proc.wait()
    answered = 0
    if building:
        for client, request in opened:
            with contextlib.suppress(TimeoutError, OSError):
                answered += client.reply(request, 5.0) is not None
    for client, _ in opened:
        client.close()
    log = "".join(p.read_text(errors="replace") for p in (base / "state").rglob("daemon*.log*"))
    mine = [line for line in log.splitlines() if f" {proc.pid} " in line]
    stopped = [i for i, line in enumerate(mine) if "daemon stopped" in line]
    after = len(mine) - 1 - stopped[-1] if stopped else -1
    with sqlite3.connect(base / "daemon.sqlite3") as db:
        intact = db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    return {
        "seconds": (gone_at or time.monotonic()) - begun,
        "killed": killed,
        "returned_after_gone": gone_when_returned,
        "lines_after_stopped": after,
        "answered": answered,
        "intact": intact,
    }


def _figures(pid: int) -> tuple[int, int, float]:
    """(inotify watches, threads, RSS MiB) of process `pid`."""
    watches = 0
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        with contextlib.suppress(OSError):
            watches += fd.read_text().count("inotify wd:")
    threads, rss = 0, 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            threads = int(line.split()[1])
        elif line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return watches, threads, rss


def _resources(base: Path, server: Path, roots: list[Path]) -> list[tuple[int, int, float]]:
    """Figures before, with the workspaces open, after every client left; and again open and
    left a second time (what stays after the first is kept once, not per workspace)."""
    env = _env(base, server)
    proc = _start(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    figures = []
    try:
        time.sleep(1.0)
        figures.append(_figures(proc.pid))
        for _ in range(2):
            opened = _open_all(sock, roots, wait=True)
            time.sleep(SETTLE_S)
            figures.append(_figures(proc.pid))
            for client, _ in opened:
                with contextlib.suppress(RuntimeError, OSError, TimeoutError):
                    client.request("shutdown")
                    client.send({"jsonrpc": "2.0", "method": "exit"})
                client.close()
            time.sleep(SETTLE_S)
            figures.append(_figures(proc.pid))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(KILL_AFTER_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return figures


def _measure(server: Path, roots: list[Path], work: Path, trials: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for building in (False, True):
        for how in ("tokend stop", "SIGTERM"):
            base = Path(tempfile.mkdtemp(prefix="tks-", dir=work))
            out[(building, how)] = [
                _stop_trial(base, server, roots, how, building) for _ in range(trials)
            ]
    base = Path(tempfile.mkdtemp(prefix="tkr-", dir=work))
    out["resources"] = _resources(base, server, roots)
    return out


def _row(label: str, tree: str, trials: list[dict], building: bool) -> str:
    secs = [t["seconds"] for t in trials]
    within = sum(t["seconds"] <= GOAL_S and not t["killed"] for t in trials)
    returned = [t["returned_after_gone"] for t in trials if t["returned_after_gone"] is not None]
    after = sum(t["lines_after_stopped"] != 0 for t in trials)
    answered = (
        f"{sum(t['answered'] for t in trials)}/{WORKSPACES * len(trials)}" if building else "-"
    )
    return (
        f"| {tree} | {label} | {statistics.median(secs):.2f} | {max(secs):.2f} | "
        f"{within}/{len(trials)} | {sum(t['killed'] for t in trials)} | "
        f"{f'{sum(returned)}/{len(returned)}' if returned else '-'} | {after} | {answered} | "
        f"{sum(t['intact'] for t in trials)}/{len(trials)} |"
    )


def run(trials: int = TRIALS) -> str:
    work = Path(tempfile.mkdtemp(prefix="tkst-"))  # short: unix socket paths max ~104 bytes
    results: dict[str, dict[str, Any]] = {}
    try:
        roots, source = _trees(work)
        files = sum(1 for root in roots for p in root.rglob("*") if p.is_file())
        with baseline_tree(BEFORE_TRUST_REV) as before:
            if before is not None:
                results[f"main before ({BEFORE_TRUST_REV})"] = _measure(
                    before / "server", roots, work, trials
                )
            results["this tree"] = _measure(ROOT / "server", roots, work, trials)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        "### Stops and released workspaces (bench/stop.py)",
        "",
        f"The real `tokend serve`, {WORKSPACES} workspaces ({source} unpacked {WORKSPACES} "
        f"times: {files:,} files), one client and session each; {trials} trials per row. "
        f"Seconds from the stop (SIGTERM sent, or `tokend stop` started) until the process is "
        f'gone; killed at {KILL_AFTER_S:.0f} s. "returned after gone": `tokend stop` returned '
        'only once the process was gone. "lines after": trials whose log has a line of the '
        'daemon after "daemon stopped" (or no such line). "answered": `repoMap/get` '
        "requests answered (an error saying tokend is stopping) before their connection closed.",
        "",
        "| tree | stop | median s | max s | gone <= 5 s | killed | returned after gone | "
        "lines after | answered | store intact |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tree, found in results.items():
        for building in (False, True):
            for how in ("tokend stop", "SIGTERM"):
                state = "first map building" if building else "maps built"
                lines.append(_row(f"{how}, {state}", tree, found[(building, how)], building))
    lines += [
        "",
        "Watches, threads and RSS of the daemon: before a workspace was opened, with the "
        f"{WORKSPACES} open (maps built), {SETTLE_S:.0f} s after every client left (shutdown, "
        "exit, closed); then the same clients again: open, and left a second time.",
        "",
        "| tree | figure | before | open | left | open again | left again |",
        "|---|---|---|---|---|---|---|",
    ]
    for tree, found in results.items():
        rows = found["resources"]
        for i, (name, fmt) in enumerate((("watches", "{:,}"), ("threads", "{}"),
                                        ("RSS MiB", "{:.0f}"))):  # fmt: skip
            cells = " | ".join(fmt.format(row[i]) for row in rows)
            lines.append(f"| {tree} | {name} | {cells} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else TRIALS))
