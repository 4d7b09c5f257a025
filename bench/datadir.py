"""Own folders: the daemon on a workspace that holds its data folder (an editor opened on ~).

A "home" folder of FILES source files has XDG_DATA_HOME, XDG_STATE_HOME, XDG_CACHE_HOME,
XDG_CONFIG_HOME and XDG_RUNTIME_DIR under it (the sessions' SQLite file is the default one, in
the data folder). The real `tokend serve` is started STARTS times on it (the first start and
three restarts, nothing in the tree changed by anyone); each time a client asks for its
`workspace/fileTokens`, a session of it gets a message (so its files are checkpointed), and once
the first walk is saved and SETTLE_S have passed, nobody touches anything for QUIET_S while

- the client counts the files named by the `workspace/didChangeFileTokens` it receives;
- an independent inotify recorder (libc's inotify through ctypes, tests/inotify_recorder.py)
  counts the change events of the whole home folder, and how many fall in tokend's folders;
- the daemon's CPU time (user + system, from /proc) is read before and after.

Then the daemon is stopped (SIGTERM) and the files of the checkpoint store are counted. The
same runs on today's main before this work (bench.baseline.BEFORE_TRUST_REV, checked out in a
temporary worktree) and on this tree, one after the other in the same run.

`python -m bench.run datadir` prints the section.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from tests.inotify_recorder import InotifyRecorder
from tests.lsp_client import LspClient

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree

FILES = 400
STARTS = 4  # the first start, then three restarts
SETTLE_S = 2.0
QUIET_S = 20.0
WALK_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
OWN = (".local/share/tokend", ".local/state/tokend", ".cache/tokend", ".run/tokend")


@dataclass
class Start:
    notified_files: int  # files named by didChangeFileTokens in the quiet window
    events: int  # inotify change events under the home folder in the quiet window
    own_events: int  # of them, in tokend's own folders
    cpu_s: float  # the daemon's CPU time in the quiet window
    store_files: int  # files in the checkpoint store after the daemon stopped
    stop_s: float  # from SIGTERM to the process gone (killed at STOP_TIMEOUT_S)
    killed: bool
    overflowed: bool  # the recorder's queue overflowed: `events` is a lower bound


def _home(base: Path) -> Path:
    home = base / "home"
    for i in range(FILES):
        folder = home / "projects" / f"app{i // 100}" / f"pkg{i // 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(40))
        (folder / f"mod{i}.py").write_text(f'"""Module {i}."""\n\n' + body)
    (home / "notes.md").write_text("things to do\n")
    for folder in (".local/share", ".local/state", ".cache", ".config"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    (home / ".run").mkdir(mode=0o700)
    return home


def _env(server_dir: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKEND_", "XDG_"))}
    return {
        **env,
        "PYTHONPATH": str(server_dir),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_RUNTIME_DIR": str(home / ".run"),
    }


def _store_files(home: Path) -> int:
    store = home / ".local/share/tokend/checkpoints"
    return sum(1 for p in store.rglob("*") if p.is_file()) if store.is_dir() else 0


def _serve(env: dict[str, str], sock: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "serve", "--listen", f"unix:{sock}",
             "--idle-timeout", "600"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while "tokend: ready" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"tokend serve did not start: {log.read_text()}")
        time.sleep(0.05)
    return proc


def _until_walked(client: LspClient, home: Path) -> None:
    uri = home.as_uri()
    assert "result" in client.request("workspace/fileTokens", {"workspaceUri": uri}, 120)
    created = client.request("session/create", {"model": "gpt-4o", "workspaceUri": uri})
    session = created["result"]["sessionId"]
    message = {"role": "user", "parts": [{"type": "text", "text": "look around"}]}
    client.request("session/append", {"sessionId": session, "message": message}, 60)
    deadline = time.monotonic() + WALK_TIMEOUT_S
    while not client.request("checkpoint/list", {"sessionId": session}, 60)["result"]["watching"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the first walk was not saved in {WALK_TIMEOUT_S:.0f} s")
        time.sleep(0.25)


def _quiet(client: LspClient, seconds: float) -> int:
    """Files named by the didChangeFileTokens received in `seconds`."""
    files = 0
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = client.read_message(left)
        except TimeoutError:
            break
        if message.get("method") == "workspace/didChangeFileTokens":
            files += len(message["params"]["files"])
    return files


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _stop(proc: subprocess.Popen[bytes]) -> tuple[float, bool]:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_TIMEOUT_S)
        return time.monotonic() - started, False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return time.monotonic() - started, True


def _one_start(env: dict[str, str], home: Path, n: int) -> Start:
    sock = home / ".run" / "bench.sock"
    proc = _serve(env, sock, home.parent / f"serve-{n}.err")
    try:
        client = LspClient.unix(sock)
        client.initialize("bench-datadir")
        _until_walked(client, home)
        time.sleep(SETTLE_S)
        recorder = InotifyRecorder(home)
        try:
            cpu_before = _cpu(proc.pid)
            notified = _quiet(client, QUIET_S)
            cpu = _cpu(proc.pid) - cpu_before
            events = recorder.since(0)
            overflowed = recorder.overflowed
        finally:
            recorder.close()
        client.close()
    finally:
        stop_s, killed = _stop(proc)
    own = [e for e in events if Path(e).relative_to(home).as_posix().startswith(OWN)]
    store = _store_files(home)
    return Start(notified, len(events), len(own), cpu, store, stop_s, killed, overflowed)


def _measure(server_dir: Path) -> list[Start]:
    base = Path(tempfile.mkdtemp(prefix="tkd-dd-"))  # short: the socket path is ~104 bytes
    try:
        home = _home(base)
        env = _env(server_dir, home)
        return [_one_start(env, home, n) for n in range(STARTS)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _row(name: str, starts: list[Start]) -> str:
    med = statistics.median
    stores = " → ".join(f"{s.store_files:,}" for s in starts)
    killed = sum(s.killed for s in starts)
    at_least = "≥ " if any(s.overflowed for s in starts) else ""  # the recorder lost some
    return (
        f"| {name} | {med(s.notified_files for s in starts):,.0f} "
        f"| {at_least}{med(s.events for s in starts):,.0f} "
        f"({med(s.own_events for s in starts):,.0f}) "
        f"| {med(s.cpu_s for s in starts):.2f} | {stores} "
        f"| {med(s.stop_s for s in starts):.1f} ({killed} killed) |"
    )


def run() -> str:
    with baseline_tree(BEFORE_TRUST_REV) as baseline_dir:
        before = _measure(baseline_dir / "server") if baseline_dir is not None else None
    after = _measure(ROOT / "server")
    lines = [
        "### Own folders: a workspace that holds the data folder (bench/datadir.py)",
        "",
        f"A home folder of {FILES} source files with XDG_DATA_HOME, XDG_STATE_HOME, "
        "XDG_CACHE_HOME and XDG_RUNTIME_DIR under it (the sessions' store the default SQLite "
        f"file in the data folder); `tokend serve` started {STARTS} times on it (nothing in "
        "the tree changed by anyone between or during the starts). Each start: "
        "`workspace/fileTokens`, a session of the folder with one message, its first walk "
        f"saved, {SETTLE_S:g} s to settle, then {QUIET_S:g} quiet seconds measured: files "
        "named by the `workspace/didChangeFileTokens` the client received, inotify change "
        "events under the home folder seen by an independent recorder (libc's inotify; in "
        "brackets, those in tokend's folders), the daemon's CPU time; then SIGTERM, and the "
        "files of the checkpoint store counted. Medians over the starts; the store after "
        "each start.",
        "",
        "| daemon | files notified in 20 s idle | inotify events in 20 s (in tokend's) "
        "| CPU s in 20 s idle | checkpoint store files after each start "
        "| SIGTERM to exit, s |",
        "|---|---:|---:|---:|---|---:|",
    ]
    if before is not None:
        lines.append(_row(f"main before this work ({BEFORE_TRUST_REV})", before))
    else:
        lines.append(f"| main before this work ({BEFORE_TRUST_REV}) | not in this clone | | | | |")
    lines.append(_row("this tree", after))
    lines += ["", _goal(before, after)]
    return "\n".join(lines) + "\n"


def _goal(before: list[Start] | None, after: list[Start]) -> str:
    notified = max(s.notified_files for s in after)
    events = max(s.own_events for s in after)
    grew = after[-1].store_files - after[0].store_files
    met = notified == 0 and events == 0 and grew == 0
    was = ""
    if before is not None:
        was = (
            f" Today's daemon: up to {max(s.notified_files for s in before):,} files notified "
            f"and {max(s.own_events for s in before):,} inotify events in its own folders per "
            f"quiet window; its store grew by {before[-1].store_files - before[0].store_files:,} "
            f"files over the {STARTS - 1} restarts."
        )
    return (
        "Goal (issue 26): 0 change notifications in 20 quiet seconds and a checkpoint store "
        f"that does not grow across {STARTS - 1} restarts ({'met' if met else 'NOT met'}: at most "
        f"{notified} files notified and {events} events in tokend's folders per window, the "
        f"store grew by {grew} files).{was}"
    )


if __name__ == "__main__":
    print(run())
