"""The artifact index on a Bash call whose command holds one long word (a base64 blob): the
time `extract_artifacts` takes (what every summarize compaction and handoff runs), on this
checkout and on main before the trust work (BEFORE_TRUST_REV, where `shlex.split` built each
word one character at a time), each in a fresh process (PYTHONPATH=<tree>/server).

The baseline is measured up to 640 KB only: its time grows with the square of the word's
length (the issue saw 1 MB and 8 MB words hold a worker for more than 20 minutes).

`python -m bench.run artifacts` prints the section.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree

SIZES = [64_000, 640_000, 8 * 1024 * 1024]
BASELINE_MAX = 640_000
ROUNDS = int(os.environ.get("BENCH_ARTIFACTS_ROUNDS", "3"))

_SCRIPT = """
import json, sys, time
from datetime import UTC, datetime
from tokend.core.artifacts import extract_artifacts
from tokend.core.types import Message, StoredPart, ToolCallPart, ToolResultPart

size = int(sys.argv[1])
blob = ("QUJD" * (size // 4 + 1))[:size]
command = f"echo {blob} | base64 -d > out.bin && rm -f stale.bin"
call = ToolCallPart("toolu_1", "Bash", {"command": command})
result = ToolResultPart("toolu_1", "Bash", "ok")
message = Message("m1", "s", "assistant", (StoredPart("p1", call), StoredPart("p2", result)),
                  datetime(2026, 1, 1, tzinfo=UTC))
started = time.perf_counter()
found = extract_artifacts([message])
elapsed = time.perf_counter() - started
assert [f.path for f in found.files] == ["stale.bin"], found.files
print(json.dumps({"seconds": elapsed}))
"""


def _time(tree: Path, size: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree / "server")}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(size)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(json.loads(done.stdout)["seconds"])


def _median(tree: Path, size: int, rounds: int) -> float:
    return statistics.median(_time(tree, size) for _ in range(rounds))


def run() -> str:
    rows = []
    with baseline_tree(BEFORE_TRUST_REV) as before:
        for size in SIZES:
            ours = _median(ROOT, size, ROUNDS)
            if before is None or size > BASELINE_MAX:
                then, ratio = "not run (quadratic: minutes)", "—"
            else:
                base = _median(before, size, 1 if size >= BASELINE_MAX else ROUNDS)
                then, ratio = f"{base:.3f} s", f"{base / ours:,.0f}×"
            rows.append(f"| {size:,} | {ours * 1000:.1f} ms | {then} | {ratio} |")
    return "\n".join(
        [
            "### Artifact index: one long word in a Bash command (bench/artifacts.py)",
            "",
            "`extract_artifacts` on one Bash call `echo <base64 word> | base64 -d > out.bin && "
            "rm -f stale.bin` (the work of each summarize compaction and handoff), in a fresh "
            f"process; median of {ROUNDS} runs (baseline at 640 KB: one run). Baseline: main "
            f"before the trust work ({BEFORE_TRUST_REV}), `shlex.split`. Both find `stale.bin` "
            "deleted.",
            "",
            "| word (characters) | this checkout | baseline | speed-up |",
            "|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )


if __name__ == "__main__":
    print(run())
