"""Issue 18's reshape before and after: the figures a user feels, on main before the reshape
began (BEFORE_RESHAPE_REV: composition root, typed persistence, feature packages, typed
handlers) and on this tree, in the same run.

Each section's probe (bench/reshape_probes.py) runs one round of that section's scenario on one
tree, in the tree's own processes (PYTHONPATH=<tree>/server); the two trees alternate round by
round (before, after; then after, before; ...), so a burst of load falls on both. Per figure:
each tree's median over the rounds, the ratio after/before, and each tree's spread (the lowest
and the highest round). A figure is flagged when it is worse by more than 10% AND its rounds do
not overlap the other tree's: the spread is the noise.

BENCH_RESHAPE_ROUNDS (default 2) rounds; BENCH_RESHAPE_ONLY=name,name runs some sections alone
(a rerun of a flagged figure); BENCH_RESHAPE_QUICK=1 shrinks the counts (a check that it works);
BENCH_RESHAPE_MAIN=REV measures a third tree, REV (today's main, for a fix's figures beside it
and beside the tree before the reshape), in the same rounds.
Raw figures in bench/out/reshape.json. `python -m bench.run reshape` prints the section.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import config, stall, stall_assemble
from bench import reshape_probes as probes
from bench import reshape_procs as procs
from bench.baseline import ROOT, baseline_tree
from bench.status import BIG_SESSION

BEFORE_RESHAPE_REV = "9f76291"
ROUNDS = int(os.environ.get("BENCH_RESHAPE_ROUNDS", "2"))
MAIN_REV = os.environ.get("BENCH_RESHAPE_MAIN")
WORSE = 1.10
OUT = Path(os.environ.get("BENCH_RESHAPE_OUT") or ROOT / "bench" / "out" / "reshape.json")
Probe = Callable[[Path, dict[str, Any]], dict[str, float]]
PROBES: dict[str, tuple[str, Probe]] = {
    "service": ("service: appends, snapshot, assemble, cold load (through the daemon)",
                probes.service),
    "daemon": ("daemon: round trips, fan-out, new connections, memory", probes.daemon_figures),
    "stall": ("stall: snapshots during a 30 MB append", probes.stall_figures),
    "stall_assemble": ("stall_assemble: snapshots during the first map and a new focus "
                       "(SQLAlchemy's sdist)", probes.stall_assemble_figures),
    "statusline": ("status and statusline per call (a daemon follows the 2.7 MB real session)",
                   probes.statusline_figures),
    "listing": ("listing: `session/list`, a fresh standalone server", procs.listing),
    "repomap_focus": ("repomap_focus: new file focuses through the daemon (SQLAlchemy's sdist)",
                      probes.focus),
    "workspace": ("workspace: a save reaching both attached clients (SQLAlchemy's sdist)",
                  probes.workspace),
    "config": ("config: reading the settings files", procs.settings),
    "app_root": ("app_root: start-up, the 2.7 MB real session's store", procs.start_up),
    "convert": ("the wire edge: `workspace/fileTokens`' JSON, in-process", procs.convert),
}  # fmt: skip
IMPORT = r"""
import sys
from pathlib import Path
try:
    from tokend.service.app import open_service as opener
except ImportError:  # main before the composition root
    from tokend.service.factory import build_service as opener
from tokend.commands.importer import import_events
s = opener(None, sys.argv[1])
import_events(s, Path(sys.argv[2]), workspace_uri=Path(sys.argv[3]).as_uri())
s.close()
"""


def _status_store(tree: Path, base: Path) -> dict[str, Any]:
    """The 2.7 MB real session imported by the tree's own code into a store of its own."""
    workspace, db = base / "app", f"sqlite:///{base}/status.sqlite3"
    workspace.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree / "server")}
    subprocess.run([sys.executable, "-c", IMPORT, db, BIG_SESSION, workspace], env=env,
                   check=True, capture_output=True)  # fmt: skip
    return {"base": base, "db": db, "workspace": workspace}


def _shared(stack: ExitStack, trees: dict[str, Path], wanted: list[str]) -> dict[str, Any]:
    shared: dict[str, Any] = {"root": ROOT}
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tkrs-")))
    if "stall" in wanted:
        shared["big"] = stall._big_messages()["30 MB tool result"]
    if {"stall_assemble", "repomap_focus", "workspace"} & set(wanted):
        tree = stack.enter_context(stall_assemble.sqlalchemy_tree())
        shared["sqlalchemy"] = tree
        files = sorted(str(p.relative_to(tree)) for p in (tree / "lib").rglob("*.py"))
        shared["focus_files"] = random.Random(18).sample(files, probes.FOCUSES)
    if "config" in wanted:
        (folder / "config.toml").write_text(config.USER_FILE)
        (folder / ".tokend.toml").write_text(config.WORKSPACE_FILE)
        (folder / "xdg" / "tokend").mkdir(parents=True)
        (folder / "xdg" / "tokend" / "config.toml").write_text(config.USER_FILE)
        shared["config_folder"] = folder
    if "app_root" in wanted:
        shared["status_stores"] = {
            tree / "server": _status_store(tree, folder / name) for name, tree in trees.items()
        }
    return shared


def measure(wanted: list[str], rounds: int = ROUNDS) -> dict[str, Any]:
    """{section: {"figures": {tree: [round figures]}, "load": [(before, after)]}}."""
    got: dict[str, Any] = {}
    with ExitStack() as stack:
        before = stack.enter_context(baseline_tree(BEFORE_RESHAPE_REV))
        if before is None:
            raise RuntimeError(f"this clone lacks {BEFORE_RESHAPE_REV}")
        trees = {"before": before, "after": ROOT}
        if MAIN_REV:
            main = stack.enter_context(baseline_tree(MAIN_REV))
            if main is None:
                raise RuntimeError(f"this clone lacks {MAIN_REV}")
            trees = {"before": before, "main": main, "after": ROOT}
        shared = _shared(stack, trees, wanted)
        for name in wanted:
            got[name] = _rounds(name, PROBES[name][1], trees, shared, rounds)
            _save(got)
    return got


def _rounds(
    name: str, probe: Probe, trees: dict[str, Path], shared: dict[str, Any], rounds: int
) -> dict[str, Any]:
    section: dict[str, Any] = {"figures": {side: [] for side in trees}, "load": []}
    for n in range(rounds):
        order = list(trees) if n % 2 == 0 else list(reversed(trees))
        for side in order:
            load = os.getloadavg()[0]
            print(f"reshape: {name} round {n + 1} {side}", file=sys.stderr, flush=True)
            try:
                section["figures"][side].append(probe(trees[side] / "server", shared))
            except Exception as exc:  # one section's failure is reported, the others run
                section["error"] = f"{side}: {type(exc).__name__}: {exc}"[:300]
                return section
            section["load"].append((load, os.getloadavg()[0]))
    return section


def _save(got: dict[str, Any]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"rounds": ROUNDS, "sections": got}, indent=1))


def _worse(before: list[float], after: list[float]) -> bool:
    """Worse by more than noise: the median by more than WORSE, and no round of `after` as
    good as the worst round of `before`."""
    ratio = statistics.median(after) / statistics.median(before) if statistics.median(before) else 1
    return ratio > WORSE and min(after) > max(before)


def flagged(got: dict[str, Any]) -> list[str]:
    """The sections with a figure worse by more than noise (to run again alone)."""
    found = []
    for name, section in got.items():
        before, after = section["figures"]["before"], section["figures"]["after"]
        if (
            before
            and after
            and any(_worse([r[k] for r in before], [r[k] for r in after]) for k in before[0])
        ):
            found.append(name)
    return found


def _spread(values: list[float]) -> str:
    return f"{min(values):.3g}-{max(values):.3g}"


def table(got: dict[str, Any]) -> list[str]:
    head = [f"main {BEFORE_RESHAPE_REV}", "after", "after/before", "rounds before", "rounds after"]
    if MAIN_REV:
        head += [f"main {MAIN_REV}", "after/main", "rounds main"]
    lines = [
        f"| section: figure | {' | '.join(head)} | |",
        f"|---|---:|---:|---:|---|---|{'---:|---:|---|' if MAIN_REV else ''}---|",
    ]
    for name, section in got.items():
        if "error" in section:
            lines.append(f"| {name}: FAILED ({section['error']}) | | | | | | |")
            continue
        before, after = section["figures"]["before"], section["figures"]["after"]
        for key in before[0]:
            b, a = [r[key] for r in before], [r[key] for r in after]
            mb, ma = statistics.median(b), statistics.median(a)
            ratio = ma / mb if mb else float("nan")
            worse = _worse(b, a)
            line = f"| {name}: {key} | {mb:.3g} | {ma:.3g} | {ratio:.2f}x | {_spread(b)} | {_spread(a)} |"
            if MAIN_REV:
                m = [r[key] for r in section["figures"]["main"]]
                mm = statistics.median(m)
                line += f" {mm:.3g} | {ma / mm if mm else float('nan'):.2f}x | {_spread(m)} |"
            lines.append(line + f" {'**worse**' if worse else ''} |")
    return lines


def run() -> str:
    only = os.environ.get("BENCH_RESHAPE_ONLY")
    wanted = only.split(",") if only else list(PROBES)
    started = datetime.now(UTC)
    got = measure(wanted)
    loads = [x for s in got.values() for pair in s["load"] for x in pair] or [float("nan")]
    lines = [
        f"### Issue 18's reshape: before (main {BEFORE_RESHAPE_REV}) and after (bench/reshape.py)\n",
        f"Run {started:%Y-%m-%d %H:%M} UTC, {ROUNDS} rounds per tree, alternating; load average "
        f"{min(loads):.1f}-{max(loads):.1f} (2 cores). Medians of the rounds' figures; each "
        "round is the section's own scenario on one tree's processes. Flagged: worse by more "
        f"than {WORSE - 1:.0%} with no round of the worse tree as good as the other's worst.\n",
        *[f"- {name}: {PROBES[name][0]}" for name in got],
        "",
        *table(got),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
