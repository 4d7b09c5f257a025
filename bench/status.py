"""`tokend status` as a shell prompt runs it: a whole process per call, wall-clock.

One store holds the big real Claude Code session (imported once). Each call is a fresh
`python -m tokend status` (the line) in the session's workspace folder, after one call of the
floor (`python -S -c pass`, so load falls on both alike):

- **no daemon, the row**: nothing kept from an earlier call (the kept lines are removed before
  each), no daemon started (TOKEND_START_DAEMON=0): the line comes from the session's row, read
  with sqlite3 alone (commands/status_row.py);
- **no daemon, the row, daemon started in the background**: the same, with the start on, as a
  prompt runs it; before each call the daemon the previous call started is stopped (by its
  process id, once it answered) and the start marker removed. The CPU a start costs is the
  started daemon's own (user + system, /proc) when it first answers;
- **no daemon, the store read whole**: `tokend --database-url URL status`, which never asks a
  daemon nor the row (what the first cold call did before this work);
- **through the daemon**: a `tokend serve` runs on that store, and status asks it (the session
  is loaded there after the first call);
- the baseline, main before this work (BASELINE), in the same run on the same store, nothing
  kept: it reads the store.

Goals: <= 100 ms per call through the daemon (issue 19: floor + 10 ms warm, <= 150 ms cold).
`python -m bench.status` prints the section.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import baseline_tree

ROOT = Path(__file__).resolve().parents[1]
BIG_SESSION = (
    ROOT.parent
    / "shared"
    / "data"
    / "claude-code-sessions"
    / ("258c7280-ae70-4798-800f-63464d01a85d.jsonl")
)
BASELINE = "67ade8c"  # main before the first cold `tokend status` read the session row
CALLS = {"daemon": 25, "store": 20, "row": 25, "start": 20}  # 20 or more each (issue 19)
TICKS = os.sysconf("SC_CLK_TCK")
IMPORT = r"""
import sys
from pathlib import Path
from tokend.commands.importer import import_events
from tokend.service.app import open_service
s = open_service(None, sys.argv[1])
import_events(s, Path(sys.argv[2]), workspace_uri=Path(sys.argv[3]).as_uri())
s.close()
"""


def _timed(
    server: Path,
    cwd: Path,
    env: dict[str, str],
    calls: int,
    before: object = None,
    args: tuple[str, ...] = ("status",),
    after: object = None,
) -> tuple[list[float], list[float], str]:
    """(ms of each `tokend ARGS`, ms of the floor timed before each, the last line)."""
    times, floor, line = [], [], ""
    for _ in range(calls):
        if callable(before):
            before()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", "pass"], capture_output=True)
        floor.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tokend", *args],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(server)},
            capture_output=True,
            text=True,
        )
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"tokend {' '.join(args)} failed: {done.stderr}")
        line = done.stdout.strip()
        if callable(after):
            after()
    return times, floor, line


class _Started:
    """The daemons a cold call started in the background: each waited for until it answers,
    its CPU then read (/proc: user + system), then stopped by its process id."""

    def __init__(self, root: Path) -> None:
        self.runtime = root / "run" / "tokend"
        self.cpu_ms: list[float] = []
        self.ready_ms: list[float] = []

    def before(self) -> None:
        shutil.rmtree(self.runtime / "status", True)  # the kept lines and the start marker

    def after(self) -> None:
        started = time.perf_counter()
        sock = str(self.runtime / "daemon.sock")
        pids = [p for p in _pids(f"unix:{sock}")]
        if len(pids) != 1:
            raise RuntimeError(f"expected one daemon started in the background, found {pids}")
        while not _answers(sock):
            if time.perf_counter() - started > 60:
                raise RuntimeError("the daemon started in the background did not answer")
            time.sleep(0.01)
        self.ready_ms.append((time.perf_counter() - started) * 1000)
        fields = Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()
        self.cpu_ms.append((int(fields[11]) + int(fields[12])) * 1000 / TICKS)
        os.kill(pids[0], signal.SIGTERM)
        while _pids(f"unix:{sock}"):
            time.sleep(0.02)


def _pids(needle: str) -> list[int]:
    """Live processes whose command line holds `needle` (this run's own runtime folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and state != "Z" and needle in line:
            found.append(int(entry.name))
    return found


def _answers(sock: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(sock)
        except OSError:
            return False
    return True


def run() -> str:
    if not BIG_SESSION.is_file():
        raise FileNotFoundError(f"the shared session is missing: {BIG_SESSION}")
    with tempfile.TemporaryDirectory(prefix="tks-") as folder, baseline_tree(BASELINE) as base:
        root = Path(folder)
        workspace = root / "app"
        workspace.mkdir()
        (root / "run").mkdir(mode=0o700)
        env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "run"), "TOKEND_START_DAEMON": "0"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tokend has its bytecode
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = str(root / var.lower())
        url = env["TOKEND_DATABASE_URL"] = f"sqlite:///{root}/status.sqlite3"
        ours = ROOT / "server"
        subprocess.run(
            [sys.executable, "-c", IMPORT, url, BIG_SESSION, workspace],
            env={**env, "PYTHONPATH": str(ours)},
            check=True,
        )
        load = os.getloadavg()[0]
        kept = root / "run" / "tokend" / "status"
        forget = lambda: shutil.rmtree(kept, True)  # noqa: E731
        started = _Started(root)
        figures = {
            "row": _timed(ours, workspace, env, CALLS["row"], forget),
            "start": _timed(
                ours,
                workspace,
                {**env, "TOKEND_START_DAEMON": "1"},
                CALLS["start"],
                started.before,
                after=started.after,
            ),
            "store": _timed(
                ours, workspace, env, CALLS["store"], args=("--database-url", url, "status")
            ),
        }
        if base is not None:
            figures["base"] = _timed(base / "server", workspace, env, CALLS["store"], forget)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "tokend", "serve", "--idle-timeout", "0"],
            env={**env, "PYTHONPATH": str(ours)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert daemon.stderr is not None
            while "tokend: ready" not in (line := daemon.stderr.readline()):
                if not line:
                    raise RuntimeError("the daemon exited before it was ready")
            first = _timed(ours, workspace, env, 1)[0][0]
            figures["daemon"] = _timed(ours, workspace, env, CALLS["daemon"])
        finally:
            daemon.terminate()
            daemon.wait()
        load_after = os.getloadavg()[0]
    same = len({figures[k][2] for k in figures}) == 1
    rows = [
        "### tokend status per call (bench/status.py)\n",
        "A fresh `python -m tokend status` process per call, on a store holding the 2.7 MB real",
        "session (343 messages), each call after one of the floor (`python -S -c pass`);",
        "wall-clock milliseconds, 'over floor' the median minus the floor's median between",
        "that row's calls. Goals: <= 100 ms through the daemon; cold (no daemon) <= 150 ms.",
        f"Baseline: main before this work ({BASELINE}), same run, same store. Load average",
        f"{load:.1f} before, {load_after:.1f} after (2 cores).\n",
        "| | calls | median | max | floor | over floor |",
        "|---|---:|---:|---:|---:|---:|",
        _row("through the daemon, this work", figures["daemon"]),
        _row("no daemon, nothing kept: the row, this work", figures["row"]),
        _row("no daemon, the row, daemon started in the background", figures["start"]),
        _row("no daemon, the store read whole (`--database-url`), this work", figures["store"]),
    ]
    if "base" in figures:
        rows.append(_row("no daemon, nothing kept, baseline (reads the store)", figures["base"]))
    cpu, ready = statistics.median(started.cpu_ms), statistics.median(started.ready_ms)
    rows += [
        "",
        f"The daemon's first call (it loads the session): {first:.0f} ms. "
        + ("Every row printed the same line." if same else "The rows printed different lines!"),
        "",
        f"A background start: the daemon answered {ready:.0f} ms (median) after the call that",
        f"started it returned, having used {cpu:.0f} ms of CPU (median, max",
        f"{max(started.cpu_ms):.0f}) to get there; the call itself waits for none of it. With",
        "the default idle_timeout_s = 60, a prompt shown at least once a minute pays one start per",
        "working stretch; one shown less often pays it at every prompt (in the background).",
    ]
    return "\n".join(rows)


def _row(what: str, figures: tuple[list[float], list[float], str]) -> str:
    times, floor, _ = figures
    p50, base = statistics.median(times), statistics.median(floor)
    return (
        f"| {what} | {len(times)} | {p50:.0f} | {max(times):.0f} | {base:.0f} | {p50 - base:+.0f} |"
    )


if __name__ == "__main__":
    print(run())
