"""Start-up through the composition root (service/app.py) beside main before it (9f76291).

Fresh processes, alternating this tree and the baseline tree (PYTHONPATH=<tree>/server), on one
store holding the 2.7 MB real Claude Code session (imported once):
- `tokend status` with no daemon, in the session's workspace: wall-clock, the process's CPU
  (user + system) and its peak RSS (the kernel's accounting of the reaped child);
- `tokend serve`: seconds until it says it is ready, then the first `tokend status` through it
  (the daemon's first connection and its loading of the session);
- `create_server` in-process, as the daemon runs it per connection: the median of 1,500 builds.
Medians over the rounds. `python -m bench.run app_root` prints the section.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import baseline_tree
from bench.status import BIG_SESSION, IMPORT

ROOT = Path(__file__).resolve().parents[1]
BEFORE_ROOT_REV = "9f76291"
ROUNDS = 7
CREATE_SERVER = r"""
import statistics, sys, tempfile, time
from pathlib import Path
from tokend.lsp import server
with tempfile.TemporaryDirectory() as tmp:
    url = f"sqlite:///{tmp}/b.sqlite3"
    try:
        from tokend.adapters.checkpoint_store import CheckpointStore
        from tokend.service.app import open_app
        target = open_app(None, url, checkpoint_store=CheckpointStore(Path(tmp) / "cp"))
    except ImportError:  # the baseline: a service, its features attached by registration
        from tokend.service.factory import build_service
        target = build_service(None, url)
    server.create_server(target)
    times = []
    for _ in range(1500):
        started = time.perf_counter()
        server.create_server(target)
        times.append((time.perf_counter() - started) * 1000)
    print(statistics.median(times))
"""


def _env(tree: Path, base: Path, db: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree / "server"), TOKEND_DATABASE_URL=db)
    # No daemon started in the background by `tokend status` (this tree's cold call starts
    # one; main 9f76291's did not): `tokend serve` below would find it and exit.
    env["TOKEND_START_DAEMON"] = "0"
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(base / var.lower())
    run = base / "run"
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o700)
    env["XDG_RUNTIME_DIR"] = str(run)
    return env


def _status(env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(wall ms, CPU ms, peak MiB) of one `tokend status` process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "tokend", "status"],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"tokend status exited {child.returncode}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_maxrss / 1024


def _daemon(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(seconds until `tokend serve` is ready, ms of the first `tokend status` through it)."""
    started = time.perf_counter()
    daemon = subprocess.Popen(
        [sys.executable, "-m", "tokend", "serve", "--idle-timeout", "0"],
        env=env,
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
        ready = time.perf_counter() - started
        first = _status(env, cwd)[0]
    finally:
        daemon.terminate()
        daemon.wait()
    return ready, first


def _create_server(env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", CREATE_SERVER], env=env, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def run() -> str:
    if not BIG_SESSION.is_file():
        raise FileNotFoundError(f"the shared session is missing: {BIG_SESSION}")
    with baseline_tree(BEFORE_ROOT_REV) as before, tempfile.TemporaryDirectory() as folder:
        if before is None:
            raise RuntimeError(f"this clone lacks {BEFORE_ROOT_REV}")
        base = Path(folder)
        workspace = base / "app"
        workspace.mkdir()
        db = f"sqlite:///{base}/status.sqlite3"
        trees = {"this tree": ROOT, f"main {BEFORE_ROOT_REV}": before}
        envs = {name: _env(tree, base / name.split()[0], db) for name, tree in trees.items()}
        subprocess.run(
            [sys.executable, "-c", IMPORT, db, BIG_SESSION, workspace],
            env=envs["this tree"],
            check=True,
        )
        got: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for _ in range(ROUNDS):
            for name, env in envs.items():
                figures = dict(zip(("wall", "cpu", "peak"), _status(env, workspace), strict=True))
                figures.update(zip(("ready", "first"), _daemon(env, workspace), strict=True))
                figures["create_server"] = _create_server(env)
                for key, value in figures.items():
                    got[name].setdefault(key, []).append(value)
    med = {name: {k: statistics.median(v) for k, v in g.items()} for name, g in got.items()}
    ours, main = med["this tree"], med[f"main {BEFORE_ROOT_REV}"]
    rows = [
        ("`tokend status`, no daemon: wall ms", "wall", "{:.0f}"),
        ("`tokend status`, no daemon: CPU ms", "cpu", "{:.0f}"),
        ("`tokend status`, no daemon: peak MiB", "peak", "{:.1f}"),
        ("`tokend serve` until ready: s", "ready", "{:.2f}"),
        ("first `tokend status` through it: ms", "first", "{:.0f}"),
        ("`create_server` in-process: ms", "create_server", "{:.3f}"),
    ]
    lines = [
        "### Composition root: start-up beside main before it (bench/app_root.py)\n",
        f"Fresh processes, this tree and main {BEFORE_ROOT_REV} alternating, {ROUNDS} rounds, one",
        "store holding the 2.7 MB real session; medians.\n",
        f"| measure | this tree | main {BEFORE_ROOT_REV} | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, key, fmt in rows:
        ratio = ours[key] / main[key] if main[key] else float("nan")
        lines.append(
            f"| {label} | {fmt.format(ours[key])} | {fmt.format(main[key])} | {ratio:.2f}x |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
