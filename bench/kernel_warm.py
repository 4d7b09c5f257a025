"""A warm start on part of the kernel (issue 22), in process, this tree's code beside
bench.kernel's BEFORE_REV: a workspace index built cold (tag workers, an empty cache), then a
second index on the same cache (every file's tags cached), each build's CPU seconds (this
process's, and its tag workers'). tokend counts what files say after the first map and keeps it
apart in the cache (file_words), so its warm start reads two tables where the code before read
one; the maps of both starts are compared (a text focus and a file focus: they read the words).
KERNEL_WARM_PART names the part (default drivers/net); CPU seconds hold at any load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.kernel import BEFORE_REV, kernel_tree

ROOT = Path(__file__).resolve().parents[1]
PART = os.environ.get("KERNEL_WARM_PART", "drivers/net")
ROUNDS = 3  # warm starts, each a fresh index on the same cache (medians)
_SCRIPT = """
import hashlib, json, resource, sys, time
from pathlib import Path
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex
tree, cache, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
def children():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
def build():
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = 2
    wall, cpu, kids = time.perf_counter(), time.process_time(), children()
    index.build()
    out = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
           "workers_s": children() - kids}
    first = sorted(p for p in index.entries() if p.endswith(".c"))[len(index.entries()) // 7]
    maps = [index.tags.repo_map(f, 1024, len, "chars").text for f in (
        Focus(text="fix a race in the transmit queue when the link goes down"),
        Focus(files=frozenset({first})))]
    out["maps"] = hashlib.sha256("\\0".join(maps).encode()).hexdigest()[:12]
    index.close()
    return out
print(json.dumps({"cold": build(), "warm": [build() for _ in range(rounds)]}))
"""


def _run(server: Path, tree: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tkkw-") as base:
        env = {**os.environ, "PYTHONPATH": str(server)}
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(tree), str(Path(base) / "c.db"), str(ROUNDS)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def _row(name: str, r: dict[str, Any]) -> str:
    cold, warm = r["cold"], r["warm"]
    each = ", ".join(f"{w['cpu_s']:.2f}" for w in warm)
    return (
        f"| {name} | {cold['cpu_s']:.2f} + {cold['workers_s']:.2f} | "
        f"{_median([w['cpu_s'] for w in warm]):.2f} ({each}) | "
        f"{_median([w['workers_s'] for w in warm]):.2f} | "
        f"{_median([w['wall_s'] for w in warm]):.2f} | {cold['maps']} / "
        f"{', '.join(sorted({w['maps'] for w in warm}))} |"
    )


def run() -> str:
    tree = kernel_tree() / PART
    files = sum(len(names) for _, _, names in os.walk(tree))
    rows = [
        f"\n\nA cold build then {ROUNDS} warm starts of {PART} ({files:,} files), in process "
        f"(load {os.getloadavg()[0]:.1f} at the start), CPU seconds:\n",
        "| code | cold: this process + tag workers | warm: this process, median (each) | "
        "warm: workers | warm: wall s, median | maps (text focus, file focus): cold / warm |",
        "|---|---:|---:|---:|---:|---|",
        _row("this tree", _run(ROOT / "server", tree)),
    ]
    if os.environ.get("KERNEL_BEFORE", "1") != "0":
        with baseline_tree(BEFORE_REV) as before:
            if before is not None:
                rows.append(_row(f"before ({BEFORE_REV})", _run(before / "server", tree)))
    rows.append(f"\n(load {os.getloadavg()[0]:.1f} at the end)")
    return "\n".join(rows)


if __name__ == "__main__":
    print(run())
