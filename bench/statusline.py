"""`tokend statusline` as Claude Code runs it: a fresh process per refresh, its JSON on stdin.

Each tree (this one, and main before this work, BASELINE) runs in its own runtime and data
folders, with the three shared Claude Code transcripts in a `projects` folder. The JSON on stdin
is what Claude Code passes (session id, transcript path, model, cost, context window). Python
writes and reuses its bytecode cache, as an installed tokend's (pip compiles it at install).

- **floor**: the interpreter's own start, `python -S -c pass` and `python -c pass`;
- **warm**: a daemon runs and follows the transcript; timed as the README tells Claude Code to
  run it (the `tokend` entry point: the console script's own lines, run with `python -c` so
  that each tree's code is used) and as `python -m tokend statusline`;
- **cold, new transcript**: a daemon runs; the transcript (a fresh copy of the 2.7 MB session)
  was never followed;
- **cold, no daemon**: nothing runs; the call is timed, and so is the time until a refresh
  (every 300 ms, as Claude Code refreshes at most) shows tokend's own figure;
- **ccusage**: ccusage's statusline (npm, its native binary), on the same transcripts and the
  same stdin, warm (its own cache answers) and cold (that cache removed before each call: the
  transcript read and priced again); installed into bench/out/ccusage on the first run;
- **status**: `tokend status` (the line) and `tokend status --json` of the followed session,
  warm, interleaved (the light path when a daemon answers, beside the baseline's full CLI);
- **follow latency**: a transcript written record by record while a connection listens: from
  the write of a provider call's last record to the `budget/didChange` that counts it;
- **Codex** (bench/statusline_codex.py): `tokend statusline codex ROLLOUT` warm and cold, and
  the follower's latency, on a GENERATED rollout (bench/codex_sample.py).

The floor is timed between the measured calls (one floor call before each), so a row's 'over
floor' compares it with the interpreter's start under the same load.
Wall-clock milliseconds; medians and maxima. `python -m bench.run statusline` prints it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.baseline import ROOT, baseline_tree
from bench.statusline_parts import (
    BASELINE,
    BIG,
    CCUSAGE,
    COLD_TRIALS,
    DATA,
    WARM_CALLS,
    _floor,
    _measure,
    _times,
    _Tree,
)


def _ccusage(tree: _Tree) -> dict[str, object] | str:
    """ccusage's statusline on the same stdin and transcripts, warm and cold (each call after
    one of the floor's), or why it could not run. Warm: its own cache (a file per session under
    $TMPDIR/ccusage-semaphore holding the last line and the transcript's mtime) answers; cold:
    that cache removed before each call, so the transcript is read and priced again."""
    folder = ROOT / "bench" / "out" / "ccusage"
    binary = folder / "node_modules" / ".bin" / "ccusage"
    if not binary.exists():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), CCUSAGE],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not binary.exists():
            return f"npm could not install {CCUSAGE}: {done.stderr.strip()[-200:]}"
    stdin = tree.stdin(tree.projects / BIG)
    args = [str(binary), "statusline", "--offline"]
    cache = tree.home / "ccusage-tmp"
    env = {**tree.env, "TMPDIR": str(cache)}
    cache.mkdir(exist_ok=True)
    first = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env)
    if first.returncode != 0:
        return f"ccusage failed: {first.stderr.strip()[-200:]}"
    figures: dict[str, object] = {"line": first.stdout.strip()}
    for kind, calls in (("warm", WARM_CALLS), ("cold", WARM_CALLS)):
        times, floor = [], []
        for _ in range(calls):
            if kind == "cold":
                shutil.rmtree(cache / "ccusage-semaphore", ignore_errors=True)
            floor.append(_floor())
            times += _times(args, 1, stdin, env)
        figures[kind], figures[f"{kind}_floor"] = times, floor
    return figures


@contextlib.contextmanager
def _trees(rollout: Path) -> Iterator[tuple[_Tree, _Tree | None]]:
    with baseline_tree(BASELINE) as base_root:
        ours = _Tree("ours", ROOT / "server", rollout)
        base = _Tree("base", base_root / "server", rollout) if base_root is not None else None
        try:
            yield ours, base
        finally:
            ours.stop()
            ours.cleanup()
            if base is not None:
                base.stop()
                base.cleanup()


def _row(what: str, times: list[float], floor: list[float]) -> str:
    """A table row: calls, median, max, the floor's median measured between these calls, and
    the difference of the medians."""
    p50, base = statistics.median(times), statistics.median(floor)
    return (
        f"| {what} | {len(times)} | {p50:.0f} | {max(times):.0f} | {base:.0f} | {p50 - base:+.0f} |"
    )


def run() -> str:
    from bench import statusline_codex

    if not (DATA / BIG).is_file():
        raise FileNotFoundError(f"the shared session is missing: {DATA / BIG}")
    with tempfile.TemporaryDirectory(prefix="tksl-codex-") as folder:
        rollout = statusline_codex.sessions_folder(Path(folder))
        with _trees(rollout) as (ours, base):
            load = os.getloadavg()
            bare, site = [], []
            for _ in range(WARM_CALLS):
                bare.append(_floor())
                site += _times([sys.executable, "-c", "pass"], 1, env=ours.env)
            mine = _measure(ours, COLD_TRIALS["ours"])
            theirs = _measure(base, COLD_TRIALS["base"]) if base is not None else None
            peer = _ccusage(ours)
            codex = statusline_codex.measure(ours, COLD_TRIALS["ours"])
            codex_base = statusline_codex.measure(base, 0) if base is not None else None
            load_after = os.getloadavg()
        about = statusline_codex.about(rollout)
    rows = [
        "### tokend statusline per refresh (bench/statusline.py)\n",
        "A fresh process per call with Claude Code's JSON on stdin (the 2.7 MB real session):",
        "`tokend statusline` as the entry point runs it, and `python -m tokend statusline`;",
        "wall-clock ms. The floor is `python -S -c pass`, timed between the calls of each row",
        "(one floor call before each measured call, so load falls on both alike); 'over",
        "floor' is the row's median minus its floor's median. Goals: warm <= floor + 10 ms;",
        "cold <= 150 ms and never blank. Bytecode cached, as installed.",
        f"Baseline: main before this work ({BASELINE}), same run, same machine. Load average",
        f"{load[0]:.1f} before, {load_after[0]:.1f} after (2 cores).\n",
        "| | calls | median | max | floor | over floor |",
        "|---|---:|---:|---:|---:|---:|",
        _row("floor: `python -S -c pass`", bare, bare),
        _row("`python -c pass` (with site)", site, bare),
        _row("warm, `tokend statusline`, this work", mine["entry"], mine["floor"]),
        _row("warm, `python -m tokend statusline`, this work", mine["warm"], mine["floor"]),
    ]
    if theirs is not None:
        rows.append(_row("warm, `tokend statusline`, baseline", theirs["entry"], theirs["floor"]))
        rows.append(
            _row("warm, `python -m tokend statusline`, baseline", theirs["warm"], theirs["floor"])
        )
    if isinstance(peer, dict):
        rows.append(_row("warm, ccusage statusline (native)", peer["warm"], peer["warm_floor"]))
    rows += [
        _row("warm, `tokend status`, this work", mine["status"], mine["status_floor"]),
        _row("warm, `tokend status --json`, this work", mine["status_json"], mine["status_floor"]),
    ]
    if theirs is not None:
        rows.append(
            _row("warm, `tokend status`, baseline", theirs["status"], theirs["status_floor"])
        )
        rows.append(
            _row(
                "warm, `tokend status --json`, baseline",
                theirs["status_json"],
                theirs["status_floor"],
            )
        )
    rows += [
        _row("cold, new transcript, this work", mine["new"], mine["new_floor"]),
        _row("cold, no daemon, this work", mine["cold"], mine["cold_floor"]),
    ]
    if theirs is not None:
        rows += [
            _row("cold, new transcript, baseline", theirs["new"], theirs["new_floor"]),
            _row("cold, no daemon, baseline", theirs["cold"], theirs["cold_floor"]),
        ]
    if isinstance(peer, dict):
        rows.append(
            _row("cold, ccusage statusline (its cache removed)", peer["cold"], peer["cold_floor"])
        )
    rows += statusline_codex.rows(codex, _row)
    rows += [
        "",
        "Until a refresh (every 300 ms) shows tokend's own figure, median ms: "
        f"new transcript {statistics.median(mine['new_reach']):.0f}, "
        f"no daemon {statistics.median(mine['cold_reach']):.0f} (this work)"
        + (
            f"; {statistics.median(theirs['new_reach']):.0f} and "
            f"{statistics.median(theirs['cold_reach']):.0f} (baseline, whose first call waits "
            "for it)."
            if theirs is not None
            else "."
        )
        + statusline_codex.reach_text(codex),
        "",
        "Follow latency (a provider call written to the transcript -> the budget/didChange "
        f"that counts it), Claude Code: this work {_latency(mine['latency'])}"
        + (f"; baseline {_latency(theirs['latency'])}" if theirs is not None else "")
        + f". Codex (the generated rollout): this work {_latency(codex['latency'])}"
        + (
            f"; baseline {_latency(codex_base['latency'])}"
            + (f" ({codex_base['latency_error']})." if "latency_error" in codex_base else ".")
            if codex_base is not None
            else "."
        ),
        "",
        f"Lines (colour codes left out): this work `{_plain(mine['line'])}`"
        + (f"; baseline `{_plain(theirs['line'])}`" if theirs is not None else "")
        + (f"; ccusage `{peer['line']}`." if isinstance(peer, dict) else f". ccusage: {peer}.")
        + f" Codex, this work: `{_plain(codex['line'])}`.",
        "",
        f"`tokend status --session ID` (same session): this work `{mine['status_line']}`"
        + (
            f"; baseline `{theirs['status_line']}`"
            + (" (the same)." if theirs["status_line"] == mine["status_line"] else ".")
            if theirs is not None
            else "."
        ),
        "",
        about,
    ]
    return "\n".join(rows)


def _latency(values: list[float]) -> str:
    if not values:
        return "not measured (no call counted)"
    return (
        f"median {statistics.median(values):.0f} ms, p95 {_p95(values):.0f} ms, "
        f"max {max(values):.0f} ms over {len(values)} calls"
    )


def _plain(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    print(run())
