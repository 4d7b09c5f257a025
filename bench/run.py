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
    "store_check",
    "daemon",
    "memory",
    "repomap",
    "compaction",
    "compaction_record",
    "compaction_cache",
    "io",
    "artifacts",
    "status",
    "telemetry",
    "checkpoints",
    "checkpoint_store",
    "workspace",
    "kernel",
    "kernel_account",
    "kernel_warm",
    "kernel_first",
    "kernel_files",
    "kernel_directives",
    "ranking",
    "repomap_eval",
    "repomap_ablate",
    "repomap_fit",
    "repomap_fit_file",
    "repomap_refit",
    "repomap_priors",
    "repomap_packages",
    "repomap_focus",
    "repomap_pagerank",
    "repomap_words",
    "repomap_whole",
    "abuse",
    "shared_db",
    "bigframes",
    "datadir",
    "restore_safety",
    "stop",
    "fuzz",
    "fuzz_edits",
    "workspace_memory",
    "scale_tree",
    "append_order",
    "config",
    "statusline",
    "claude",
    "claude_upgrade",
    "app_root",
    "scale_session",
    "scale_assemble",
    "kill9",
    "reshape",
]


SAVED = ROOT / "bench" / "out" / "sections"


def assemble() -> int:
    """BENCHMARKS.md from the sections saved by earlier runs (`python -m bench.run --assemble`),
    each headed by when it ran: sections can be measured one by one, each in a run of its own."""
    parts = [
        "# Benchmarks\n",
        "Written by `make bench`. Every figure stands beside its baseline or peer measured in the same run;",
        "the machines are shared and noisy, so read medians and ratios, not single timings.\n",
        f"Python {platform.python_version()} · {os.cpu_count()} cores · {platform.machine()}\n",
    ]
    missing = []
    for name in SECTIONS:
        saved = SAVED / f"{name}.md"
        if not saved.is_file():
            missing.append(name)
            continue
        parts.append(saved.read_text().rstrip() + "\n")
    if missing:
        parts.append("Not measured in this run: " + ", ".join(missing) + ".\n")
    (ROOT / "BENCHMARKS.md").write_text("\n".join(parts))
    print(f"bench: wrote BENCHMARKS.md ({len(SECTIONS) - len(missing)} sections)", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--assemble"]:
        return assemble()
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
        stamp = f"Run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({name})\n\n"
        SAVED.mkdir(parents=True, exist_ok=True)
        (SAVED / f"{name}.md").write_text(section.rstrip() + "\n\n_" + stamp.strip() + "_\n")
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
