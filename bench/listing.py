"""`session/list` over 1,000 stored sessions, asked of a freshly started real server.

The sessions are written once by each tree's own service (bench.service_shape.WRITE_SESSIONS:
4 messages each, one provider call; the baseline, before the composition root, through its
factory). Then each tree's `tokend lsp --standalone` is started on that store and asked
`session/list` repeatedly:
tokend answers from the gauge figures stored with each session's last change; the baseline
(main before this change) loaded every session to answer. The baseline's store is written by
the baseline itself (its rows lack the stored figures; it would not read them anyway).

`python -m bench.listing` prints the section.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import BASELINE_REV, ROOT, baseline_tree
from bench.service_shape import WRITE_SESSIONS

SESSIONS = 1000
CALLS = {"ours": 20, "baseline": 3}


def _env(server_dir: Path, folder: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{server_dir}{os.pathsep}{ROOT}"}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = folder
    return env


def _measure(server_dir: Path, calls: int) -> list[float]:
    from bench.daemon import _Client

    with tempfile.TemporaryDirectory(prefix="tokend-list-") as folder:
        url = f"sqlite:///{folder}/list.sqlite3"
        env = _env(server_dir, folder)
        subprocess.run(
            [sys.executable, "-c", WRITE_SESSIONS, url, str(SESSIONS)], env=env, check=True
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "--database-url", url, "lsp", "--standalone"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        client = _Client(proc.stdout.fileno(), proc.stdin.fileno(), proc)
        client.initialize("bench")
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            listed = client.request("session/list", {"workspaceUri": "file:///ws"})
            times.append((time.perf_counter() - started) * 1000)
            assert len(listed["sessions"]) == SESSIONS
        client.close()
    return times


def run() -> str:
    ours = _measure(ROOT / "server", CALLS["ours"])
    lines = [
        f"### session/list over {SESSIONS:,} sessions (bench/listing.py)\n",
        f"A fresh `tokend lsp --standalone` on a store of {SESSIONS:,} sessions; milliseconds per call.",
        "Goal: <= 50 ms.\n",
        "| | calls | first | median | max |",
        "|---|---:|---:|---:|---:|",
        f"| tokend | {len(ours)} | {ours[0]:.1f} | {statistics.median(ours):.1f} | {max(ours):.1f} |",
    ]
    with baseline_tree() as base_dir:
        if base_dir is not None:
            base = _measure(base_dir / "server", CALLS["baseline"])
            lines.append(
                f"| baseline {BASELINE_REV} | {len(base)} | {base[0]:.1f} | "
                f"{statistics.median(base):.1f} | {max(base):.1f} |"
            )
            lines.append(
                f"\nMedian {statistics.median(ours):.1f} ms vs {statistics.median(base):,.0f} ms "
                f"(x{statistics.median(base) / statistics.median(ours):.0f})."
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
