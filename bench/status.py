"""`tokend status` as a shell prompt runs it: a whole process per call, wall-clock.

One store holds the big real Claude Code session (imported once). Each call is a fresh
`python -m tokend status` in the session's workspace folder:

- through the daemon: a `tokend serve` runs on that store, and status asks it (the session is
  loaded there after the first call);
- the baseline, in the same run: no daemon, so status opens the store and loads the session
  itself, as every `tokend status` did before it asked the daemon.

Goal: <= 100 ms per call through the daemon. `python -m bench.status` prints the section.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIG_SESSION = (
    ROOT.parent
    / "shared"
    / "data"
    / "claude-code-sessions"
    / ("258c7280-ae70-4798-800f-63464d01a85d.jsonl")
)
CALLS = {"daemon": 25, "store": 7}
IMPORT = r"""
import sys
from pathlib import Path
from tokend.commands.importer import import_events
from tokend.service.app import open_service
s = open_service(None, sys.argv[1])
import_events(s, Path(sys.argv[2]), workspace_uri=Path(sys.argv[3]).as_uri())
s.close()
"""


def _timed(args: list[str], cwd: Path, env: dict[str, str], calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"tokend status failed: {done.stderr}")
    return times


def run() -> str:
    if not BIG_SESSION.is_file():
        raise FileNotFoundError(f"the shared session is missing: {BIG_SESSION}")
    with tempfile.TemporaryDirectory(prefix="tks-") as folder:
        base = Path(folder)
        workspace = base / "app"
        workspace.mkdir()
        (base / "run").mkdir(mode=0o700)
        env = {
            **os.environ,
            "XDG_RUNTIME_DIR": str(base / "run"),
            "PYTHONPATH": str(ROOT / "server"),
        }
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = str(base / var.lower())
        env["TOKEND_DATABASE_URL"] = f"sqlite:///{base}/status.sqlite3"
        python = [sys.executable, "-m", "tokend"]
        subprocess.run(
            [sys.executable, "-c", IMPORT, env["TOKEND_DATABASE_URL"], BIG_SESSION, workspace],
            env=env,
            check=True,
        )
        store = _timed([*python, "status"], workspace, env, CALLS["store"])
        daemon = subprocess.Popen(
            [*python, "serve", "--idle-timeout", "0"],
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
            first = _timed([*python, "status"], workspace, env, 1)
            ours = _timed([*python, "status"], workspace, env, CALLS["daemon"])
        finally:
            daemon.terminate()
            daemon.wait()
    p50, base_p50 = statistics.median(ours), statistics.median(store)
    return "\n".join(
        [
            "### tokend status per call (bench/status.py)\n",
            "A fresh `python -m tokend status` process per call, on a store holding the 2.7 MB real",
            "session (343 messages); wall-clock milliseconds. Goal: <= 100 ms through the daemon.\n",
            "| | calls | first | median | max |",
            "|---|---:|---:|---:|---:|",
            f"| through the daemon | {len(ours)} | {first[0]:.0f} | {p50:.0f} | {max(ours):.0f} |",
            f"| baseline: no daemon, from the store | {len(store)} | {store[0]:.0f} | "
            f"{base_p50:.0f} | {max(store):.0f} |",
            f"\nMedian {p50:.0f} ms vs {base_p50:.0f} ms (x{base_p50 / p50:.1f}).",
        ]
    )


if __name__ == "__main__":
    print(run())
