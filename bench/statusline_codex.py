"""The Codex rows of the statusline bench (bench/statusline.py): `tokend statusline codex
ROLLOUT` warm and cold, and the follower's latency, on a GENERATED rollout.

There is no real Codex rollout in the shared data: bench/codex_sample.py writes one in Codex
CLI's rollout format, sized like a real session, and every figure from it says so. Timed as the
Claude Code rows are, each call after one of the floor's (`python -S -c pass`):

- **warm**: a daemon follows the rollout; `tokend statusline codex ROLLOUT` (nothing on stdin,
  as a shell prompt or tmux runs it);
- **cold, new rollout**: a daemon runs; a copy of the rollout under another Codex session id,
  never followed;
- **cold, no daemon**: nothing runs; the command prints Codex's own figures from the rollout's
  end at once and starts the daemon and the follower behind it;
- **follow latency**: the rollout's responses written one at a time (each up to its
  `token_count`) into a followed file, to the budget/didChange that counts each.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.codex_sample import SESSION_ID, write_rollout
from bench.statusline_parts import (
    WARM_CALLS,
    _floor,
    _stop,
    _Tree,
    _until_tokend,
    follow_latency,
)

RESPONSES = 300
START_S = 120  # what follow/start of the rollout's first half is given


def sessions_folder(base: Path) -> Path:
    """A Codex sessions folder holding the generated rollout (copied into each tree's home)."""
    folder = base / "sessions"
    write_rollout(folder, RESPONSES)
    return folder


def _rollout(tree: _Tree) -> Path:
    return next((tree.home / "codex" / "sessions").rglob("rollout-*-0199b.jsonl"))


def _new_copy(tree: _Tree, tag: str) -> Path:
    """The rollout as another Codex session (its id replaced), never followed."""
    source = _rollout(tree)
    new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, tag))
    target = source.with_name(f"rollout-2026-11-18T09-00-00-{tag}.jsonl")
    target.write_text(source.read_text().replace(SESSION_ID, new_id))
    return target


def measure(tree: _Tree, trials: int) -> dict[str, Any]:
    """With `trials`: the warm and cold calls (this work: the baseline has no `statusline
    codex`); always the follow latency."""
    figures: dict[str, Any] = {}
    if trials:
        figures.update(_calls(tree, trials))
    tree.fresh()
    daemon = tree.serve()
    try:
        source = _rollout(tree).read_text().splitlines()
        path = _rollout(tree).with_name("rollout-2026-11-18T09-00-00-latency.jsonl")
        try:  # main before this work may not answer: say so rather than wait for it
            figures["latency"] = follow_latency(tree, "codex", source, path, START_S)
        except RuntimeError as exc:
            figures["latency"], figures["latency_error"] = [], str(exc)
    finally:
        _stop(daemon)
        tree.stop()
    return figures


def _calls(tree: _Tree, trials: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    tree.fresh()
    daemon = tree.serve()
    try:
        args = ("codex", str(_rollout(tree)))
        _until_tokend(tree, "", time.perf_counter(), args)
        figures["line"] = tree.statusline("", args=args)[1]
        figures["warm"], figures["floor"] = [], []
        for _ in range(WARM_CALLS):
            figures["floor"].append(_floor())
            figures["warm"].append(tree.statusline("", entry=True, args=args)[0])
        new, reach, floor = [], [], []
        for i in range(trials):
            copy = ("codex", str(_new_copy(tree, f"copy{i}")))
            floor.append(_floor())
            started = time.perf_counter()
            new.append(tree.statusline("", args=copy)[0])
            reach.append(_until_tokend(tree, "", started, copy))
        figures["new"], figures["new_reach"], figures["new_floor"] = new, reach, floor
    finally:
        _stop(daemon)
        tree.stop()
    cold, reach, floor, first = [], [], [], []
    for _ in range(trials):
        tree.fresh()
        args = ("codex", str(_rollout(tree)))
        floor.append(_floor())
        started = time.perf_counter()
        elapsed, line = tree.statusline("", args=args)
        cold.append(elapsed)
        first.append(line)
        reach.append(_until_tokend(tree, "", started, args))
        tree.stop()
    figures["cold"], figures["cold_reach"], figures["cold_floor"] = cold, reach, floor
    figures["cold_line"] = first[0]
    return figures


def rows(codex: dict[str, Any], row: Callable[[str, list[float], list[float]], str]) -> list[str]:
    what = "`tokend statusline codex ROLLOUT` (generated rollout), this work"
    return [
        row(f"warm, {what}", codex["warm"], codex["floor"]),
        row(f"cold, new rollout, {what}", codex["new"], codex["new_floor"]),
        row(f"cold, no daemon, {what}", codex["cold"], codex["cold_floor"]),
    ]


def reach_text(codex: dict[str, Any]) -> str:
    return (
        f" Codex (generated rollout, this work): new rollout "
        f"{statistics.median(codex['new_reach']):.0f}, no daemon "
        f"{statistics.median(codex['cold_reach']):.0f}; its first line with no daemon, Codex's "
        f"own figures: `{codex['cold_line']}`."
    )


def about(folder: Path) -> str:
    path = next(folder.rglob("rollout-*.jsonl"))
    records = sum(1 for _ in path.open())
    return (
        f"The Codex rows use a GENERATED rollout (bench/codex_sample.py; there is no real Codex "
        f"rollout in the shared data): Codex CLI's rollout format, {RESPONSES} model responses, "
        f"{records:,} records, {path.stat().st_size / 1e6:.1f} MB, tool outputs cut from this "
        "repository's sources, token figures a quarter of the characters, Codex's compaction "
        "near the 272k window. Warm and cold are this work only: main before it has no "
        "`tokend statusline codex`."
    )
