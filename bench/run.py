"""`make bench`: run every benchmark and write BENCHMARKS.md (each figure beside its baseline)."""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = [
    "replay",
    "calibration",
    "listing",
    "stall",
    "estimator",
    "service",
    "store",
    "daemon",
    "repomap",
    "compaction",
    "status",
    "telemetry",
    "checkpoints",
    "workspace",
]


def main(argv: list[str]) -> int:
    wanted = argv or SECTIONS
    parts = [
        "# Benchmarks\n",
        "Written by `make bench`. Every figure stands beside its baseline or peer measured in the same run;",
        "the machines are shared and noisy, so read medians and ratios, not single timings.\n",
        f"Run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC · Python {platform.python_version()} · "
        f"{os.cpu_count()} cores · {platform.machine()}\n",
    ]
    failed = 0
    for name in wanted:
        started = time.perf_counter()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            section = module.run()
        except Exception:
            failed += 1
            section = f"### {name}\n\nFAILED:\n\n```\n{traceback.format_exc()}```\n"
        parts.append(section.rstrip() + "\n")
        print(
            f"bench: {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True
        )
    if not argv:
        (ROOT / "BENCHMARKS.md").write_text("\n".join(parts))
        print("bench: wrote BENCHMARKS.md", file=sys.stderr)
    else:
        print("\n".join(parts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
