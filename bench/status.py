"""`tokend status` as a shell prompt runs it: a whole process per call, wall-clock.

One store holds the big real Claude Code session (imported once). Each call is a fresh
`python -m tokend status` (the line) in the session's workspace folder, after one call of the
floor (`python -S -c pass`, so load falls on both alike):

- **no daemon, the store read**: nothing kept from an earlier call (the kept lines are removed
  before each), so status opens the store and loads the session itself;
- **no daemon, the line kept**: the line the previous call printed, shown because the store
  says its session has not changed since (commands/status_cold.py);
- **through the daemon**: a `tokend serve` runs on that store, and status asks it (the session
  is loaded there after the first call);
- the baseline, main before this work (BASELINE), in the same run on the same store: with no
  daemon it reads the store at every call.

Goals: <= 100 ms per call through the daemon (issue 19: floor + 10 ms warm, <= 150 ms cold).
`python -m bench.status` prints the section.
"""

from __future__ import annotations

import os
import shutil
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
BASELINE = "41dd9a0"  # main before the kept line of a cold `tokend status`
CALLS = {"daemon": 25, "store": 7, "kept": 25}
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
    server: Path, cwd: Path, env: dict[str, str], calls: int, before: object = None
) -> tuple[list[float], list[float], str]:
    """(ms of each `tokend status`, ms of the floor timed before each, the last line)."""
    times, floor, line = [], [], ""
    for _ in range(calls):
        if callable(before):
            before()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", "pass"], capture_output=True)
        floor.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tokend", "status"],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(server)},
            capture_output=True,
            text=True,
        )
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"tokend status failed: {done.stderr}")
        line = done.stdout.strip()
    return times, floor, line


def run() -> str:
    if not BIG_SESSION.is_file():
        raise FileNotFoundError(f"the shared session is missing: {BIG_SESSION}")
    with tempfile.TemporaryDirectory(prefix="tks-") as folder, baseline_tree(BASELINE) as base:
        root = Path(folder)
        workspace = root / "app"
        workspace.mkdir()
        (root / "run").mkdir(mode=0o700)
        env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "run")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tokend has its bytecode
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = str(root / var.lower())
        env["TOKEND_DATABASE_URL"] = f"sqlite:///{root}/status.sqlite3"
        ours = ROOT / "server"
        subprocess.run(
            [sys.executable, "-c", IMPORT, env["TOKEND_DATABASE_URL"], BIG_SESSION, workspace],
            env={**env, "PYTHONPATH": str(ours)},
            check=True,
        )
        load = os.getloadavg()[0]
        kept = root / "run" / "tokend" / "status"
        figures = {
            "store": _timed(
                ours, workspace, env, CALLS["store"], lambda: shutil.rmtree(kept, True)
            ),
            "kept": _timed(ours, workspace, env, CALLS["kept"]),
        }
        if base is not None:
            figures["base"] = _timed(base / "server", workspace, env, CALLS["store"])
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
    same = len({figures[k][2] for k in figures}) == 1
    rows = [
        "### tokend status per call (bench/status.py)\n",
        "A fresh `python -m tokend status` process per call, on a store holding the 2.7 MB real",
        "session (343 messages), each call after one of the floor (`python -S -c pass`);",
        "wall-clock milliseconds, 'over floor' the median minus the floor's median between",
        "that row's calls. Goals: <= 100 ms through the daemon; cold (no daemon) <= 150 ms.",
        f"Baseline: main before this work ({BASELINE}), same run, same store. Load average",
        f"{load:.1f} (2 cores).\n",
        "| | calls | median | max | floor | over floor |",
        "|---|---:|---:|---:|---:|---:|",
        _row("through the daemon, this work", figures["daemon"]),
        _row("no daemon, the line kept (store unchanged), this work", figures["kept"]),
        _row("no daemon, the store read (nothing kept), this work", figures["store"]),
    ]
    if "base" in figures:
        rows.append(_row("no daemon, baseline (reads the store every call)", figures["base"]))
    rows += [
        "",
        f"The daemon's first call (it loads the session): {first:.0f} ms. "
        + ("Every row printed the same line." if same else "The rows printed different lines!"),
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
