"""Restore safety: swapped symlinks, restored modes, and kill -9 midway, on the real daemon.

Each scenario of bench/restore_scenarios.py runs on a real `tokend serve` of this checkout and,
in the same run, of today's daemon (main before the trust work, BEFORE_TRUST_REV, checked out in
a temporary worktree). Judged on disk:

- symlinks: for each variant (folder swapped, parent of parent swapped, file swapped, final
  component a symlink), with and without `force`, through checkpoint/restore and session/rewind
  "code" and "both": the files written or created, and deleted, in the outside folder the link
  points to;
- modes: files of 0600/0640/0755 the agent deleted, each mode after checkpoint/restore;
- kill -9: TRIALS restores (a third each of checkpoint/restore, rewind "code", rewind "both") of a
  turn that rewrote FILES files, killed at a random point in [0, 1.2 x] the time an unkilled one
  takes there, then a restart: trees left half-restored and not reported (checkpoint/list's
  `interrupted` or a window/logMessage), temporary `.tokend-restore` files left, "both" rewinds
  whose files and conversation disagree.

`python -m bench.run restore_safety` prints the section.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.baseline import BEFORE_TRUST_REV, baseline_tree
from bench.restore_scenarios import (
    METHODS,
    VARIANTS,
    KillTrial,
    Rig,
    VariantResult,
    agent_turn,
    kill_trial,
    restored_modes,
    rewind_or_restore,
    symlink_variant,
)

TRIALS = 30
FILES = 500
SEED = 17


def _variants(rig: Rig) -> list[VariantResult]:
    client = rig.client()
    return [
        symlink_variant(client, rig.base, variant, method, force)
        for variant in VARIANTS
        for method in METHODS
        for force in (False, True)
    ]


def _unkilled_seconds(rig: Rig, method: str) -> float:
    client = rig.client()
    ws = rig.base / f"calibrate{random.randrange(1 << 30)}"
    names = [f"p{i % 10}/s{i % 3}/m{i}.py" for i in range(FILES)]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(f"# {name}\nVALUE = 1\n")

    def change() -> None:
        for i, name in enumerate(names):
            if i % 5 == 0:
                (ws / name).unlink()
            else:
                (ws / name).write_text(f"# {name}\nVALUE = 2\n")

    sid, first = agent_turn(client, ws, change, set(names))
    started = time.monotonic()
    rewind_or_restore(client, sid, first, method)
    return time.monotonic() - started


def _kills(rig: Rig) -> tuple[dict[str, float], list[KillTrial]]:
    rng = random.Random(SEED)
    took = {method: _unkilled_seconds(rig, method) for method in METHODS}
    trials = []
    for n in range(TRIALS):
        method = METHODS[n % len(METHODS)]
        trials.append(kill_trial(rig, rig.base, method, FILES, rng.uniform(0, 1.2 * took[method])))
    return took, trials


@dataclass
class Measured:
    variants: list[VariantResult]
    modes: dict[str, tuple[int, int | None]]
    took: dict[str, float]
    trials: list[KillTrial]


def measure(tree: Path | None) -> Measured:
    base = Path(tempfile.mkdtemp(prefix="tkrb-"))  # short: unix socket paths are ~104 bytes
    rig = Rig(base, tree)
    rig.start()
    try:
        variants = _variants(rig)
        modes = restored_modes(rig.client(), base, "checkpoint/restore")
        took, trials = _kills(rig)
    finally:
        rig.stop()
        shutil.rmtree(base, ignore_errors=True)
    return Measured(variants, modes, took, trials)


def _variant_rows(now: list[VariantResult], today: list[VariantResult]) -> list[str]:
    rows = [
        "| variant | runs | today: written / deleted outside (runs that touched it) "
        "| this tree: written / deleted outside | this tree: paths reported kept |",
        "|---|---|---|---|---|",
    ]
    for variant in VARIANTS:
        a = [r for r in today if r.variant == variant]
        b = [r for r in now if r.variant == variant]
        hit = sum(1 for r in a if r.outside_written or r.outside_deleted)
        rows.append(
            f"| {variant} | {len(b)} | {sum(r.outside_written for r in a)} / "
            f"{sum(r.outside_deleted for r in a)} ({hit} of {len(a)}) | "
            f"{sum(r.outside_written for r in b)} / {sum(r.outside_deleted for r in b)} | "
            f"{sum(r.reported for r in b)} |"
        )
    return rows


def _kill_row(name: str, took: dict[str, float], trials: list[KillTrial]) -> str:
    killed = [t for t in trials if not t.answered]
    both = [t for t in trials if t.conversation_rewound is not None]
    median = statistics.median(took.values())
    return (
        f"| {name} | {median:.2f} s | {len(killed)} of {len(trials)} | "
        f"{sum(1 for t in trials if t.half)} | {sum(1 for t in trials if t.half_unreported)} | "
        f"{sum(1 for t in trials if t.reported)} | "
        f"{sum(1 for t in trials if t.temporaries)} ({sum(t.temporaries for t in trials)} files) | "
        f"{sum(1 for t in both if t.both_split)} of {len(both)} |"
    )


def run() -> str:
    started = time.monotonic()
    now = measure(None)
    with baseline_tree(BEFORE_TRUST_REV) as tree:
        today = measure(tree) if tree is not None else None
    lines = ["### Restore safety (swapped symlinks, modes, kill -9 midway)", ""]
    if today is None:
        lines.append(f"Today's daemon ({BEFORE_TRUST_REV}) is not in this clone: not compared.")
        return "\n".join(lines) + "\n"
    runs = len(METHODS) * 2
    lines += [
        f"Real `tokend serve` of this tree and of today's ({BEFORE_TRUST_REV}), same run. Each "
        f"variant: {runs} runs (checkpoint/restore, rewind code, rewind both; each with and "
        "without force) of a turn that deleted `d/f.txt`, rewrote `d/h.txt`, created "
        "`d/new.txt` and deleted a 0600 `keep.env`, then the swap; counted on the outside "
        "folder's files.",
        "",
        *_variant_rows(now.variants, today.variants),
        "",
        "Modes after checkpoint/restore of files the agent deleted (before → after):",
        "",
        "| file | before | today | this tree |",
        "|---|---|---|---|",
    ]
    for name, (before, after) in now.modes.items():
        old = today.modes[name][1]
        lines.append(f"| `{name}` | {before:04o} | {_mode(old)} | {_mode(after)} |")
    lines += [
        "",
        f"kill -9 at a random point of a restore of a turn that rewrote or deleted {FILES} files "
        f"({TRIALS} trials per daemon: a third each checkpoint/restore, rewind code, rewind "
        "both), then a "
        'restart; "unkilled" is the median time of one unkilled restore of each kind there '
        "(the kill points scale with it).",
        "",
        "| daemon | unkilled restore | killed before the reply | half-restored after "
        "restart | half-restored, unreported | reported | trials leaving temporaries | "
        '"both" files ≠ conversation |',
        "|---|---|---|---|---|---|---|---|",
        _kill_row("today", today.took, today.trials),
        _kill_row("this tree", now.took, now.trials),
        "",
        f"(measured in {time.monotonic() - started:.0f} s)",
    ]
    return "\n".join(lines) + "\n"


def _mode(mode: int | None) -> str:
    return "absent" if mode is None else f"{mode:04o}"


if __name__ == "__main__":
    print(run())
