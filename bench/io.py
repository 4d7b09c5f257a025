"""The I/O adapters: the HTTP summarizer (adapters/model_http.py, httpx) and the watchdog
adapter (adapters/watch.py) as the daemon's followers use it, beside the daemon before them
(BEFORE_IO_REV: urllib in a thread per call; the followers' own watchdog observer) in one run.

bench/io_probe.py measures in one process per tree (PYTHONPATH=<tree>/server), ROUNDS times,
the trees alternating; a figure is the median of the rounds' medians:
  summarizer call       one HTTP summarizer call against a model server on 127.0.0.1 that
                        answers at once (the adapter's own cost: a real model takes seconds)
  16 calls at once      wall time, and the threads the calls added (the server's aside)
  cancel -> closed      a call cancelled once the server read the request: until the server
                        sees its connection closed
  follow: record read   a record appended to a followed transcript, until the follower read it
  follow: new session   a transcript created in a followed sessions folder, until followed
  ... without inotify   the same, the probe in a user namespace whose
                        fs.inotify.max_user_instances is 0 (`unshare -Ur`): before, follow/start
                        failed there
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree

BEFORE_IO_REV = "9f76291"  # main before the I/O adapters (issue 18)
ROUNDS = int(os.environ.get("BENCH_IO_ROUNDS", "5"))
SESSION = ROOT.parent / "shared" / "data" / "claude-code-sessions" / "tool_heavy.jsonl"
NO_INOTIFY = 'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" -m bench.io_probe "$@"'


def probe(tree: Path, mode: str, *, no_inotify: bool = False) -> dict[str, Any]:
    args = [mode, str(SESSION)]
    command = [sys.executable, "-m", "bench.io_probe", *args]
    if no_inotify:
        command = ["unshare", "-Ur", "sh", "-c", NO_INOTIFY, sys.executable, *args]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{tree / 'server'}{os.pathsep}{ROOT}"},
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _median(rounds: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rounds if key in r]
    return statistics.median(values) if values else None


def _cell(value: float | None, unit: str = "ms") -> str:
    if value is None:
        return "fails"
    if value == float("inf"):
        return "never (10 s)"
    return f"{value:,.1f} {unit}" if unit == "ms" else f"{value:g}"


def _ratio(after: float | None, before: float | None) -> str:
    if after is None or before is None or before == 0 or float("inf") in (after, before):
        return ""
    return f"{after / before:.2f}x"


def run() -> str:
    if not SESSION.is_file():
        raise FileNotFoundError(f"bench/io needs {SESSION.name} in shared/data")
    if shutil.which("unshare") is None:
        raise RuntimeError("bench/io needs util-linux's `unshare` for its no-inotify case")
    trees: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with baseline_tree(BEFORE_IO_REV) as before:
        if before is None:
            raise RuntimeError(f"this clone lacks {BEFORE_IO_REV}")
        for _ in range(ROUNDS):
            for name, tree in (("before", before), ("after", ROOT)):
                figures = probe(tree, "http")
                figures.update(probe(tree, "follow"))
                blind = probe(tree, "follow", no_inotify=True)
                figures.update({f"blind_{k}": v for k, v in blind.items()})
                trees[name].append(figures)
    rows = [
        ("summarizer call (median)", "call_ms", "ms"),
        ("summarizer call (p95)", "call_p95_ms", "ms"),
        ("16 summarizer calls at once", "concurrent_ms", "ms"),
        ("threads those 16 calls added", "extra_threads", ""),
        ("cancel -> the server sees the connection closed", "cancel_ms", "ms"),
        ("follow: record appended -> read", "append_ms", "ms"),
        ("follow: new transcript in the folder -> followed", "new_transcript_ms", "ms"),
        ("follow without inotify: record appended -> read", "blind_append_ms", "ms"),
        ("follow without inotify: new transcript -> followed", "blind_new_transcript_ms", "ms"),
    ]
    out = [
        "### I/O adapters: the HTTP summarizer on httpx, one watchdog adapter\n",
        f"Medians of {ROUNDS} rounds (each a process per tree, the trees alternating; see "
        f"bench/io.py). Before: main at {BEFORE_IO_REV} (urllib in a thread per call; the "
        "followers' own watchdog observer, no polling).\n",
        "| figure | before | after | after / before |",
        "|---|---|---|---|",
    ]
    for label, key, unit in rows:
        b, a = _median(trees["before"], key), _median(trees["after"], key)
        out.append(f"| {label} | {_cell(b, unit)} | {_cell(a, unit)} | {_ratio(a, b)} |")
    errors = sorted(
        {
            f"{name}: {r['blind_error']}"
            for name, rs in trees.items()
            for r in rs
            if "blind_error" in r
        }
    )
    if errors:
        out.append("\nWithout inotify: " + "; ".join(errors))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(run())
