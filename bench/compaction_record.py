"""Compaction across a foreign boundary (issue 21), beside main before the fix in one run.

Every shared Claude Code session is imported whole through `tokend import`'s code (the big one
holds Claude Code's own compact_boundary), and that one also cut at its boundary (the history
Claude Code compacted) and with its compaction records removed (the boundary and the summary
after it), then compacted with session/compact "summarize", or handed
off with session/handoff; the probes (bench.compaction's oracles, read from the raw JSONL) are
checked against the request context/assemble builds (for a handoff: the child's). Each tree
runs in its own process (PYTHONPATH=<tree>/server); the probes are this tree's.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree
from bench.service_shape import append, sessions

BEFORE_RECORD_REV = "5c30823"  # main when issue 21's work was last merged with it
GOAL = "carry on with the same task"
PERF_RUNS = 5


def variants(name: str) -> list[tuple[str, list[str]]]:
    from bench.compaction import SESSIONS_DIR

    lines = [line for line in (SESSIONS_DIR / name).read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    out = [("whole", lines)]
    cut = next((i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary"), None)
    if cut is not None:
        out.append(("cut at its boundary", lines[:cut]))
        kept = [
            line
            for line, r in zip(lines, records, strict=True)
            if r.get("subtype") != "compact_boundary" and not r.get("isCompactSummary")
        ]
        out.append(("compaction records removed", kept))
    return out


def measure_tree() -> list[dict[str, Any]]:
    """This process's tree: every session, variant and method (run with PYTHONPATH set)."""
    from bench.compaction import SESSIONS, _assembled, _import, probes, share
    from tokend.service.compaction.tiers import compact
    from tokend.service.session.handoff import handoff

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SESSIONS:
            for variant, lines in variants(name):
                found = probes([json.loads(line) for line in lines])
                for method in ("summarize", "handoff"):
                    tag = f"{name}-{len(rows)}"
                    service, sid = _import("\n".join(lines) + "\n", Path(tmp), tag)
                    # the gauge: without its compaction records the big session is over the
                    # input limit, and context/assemble refuses it until it is compacted
                    before = sessions(service).state(sid).snapshot.used_tokens
                    if method == "summarize":
                        outcome = compact(service, sid, "summarize")
                        after = sessions(service).state(sid).snapshot.used_tokens
                        text = _assembled(service, sid)[1]
                        acted = [a.kind for a in outcome.actions]
                        said = " ".join(a.detail for a in outcome.actions)
                        check = said.split("quality check", 1)[1] if "quality check" in said else ""
                    else:
                        child = asyncio.run(handoff(service, sid, GOAL)).child.id
                        after = sessions(service).state(child).snapshot.used_tokens
                        text = _assembled(service, child)[1]
                        acted = ["handoff"]
                        check = ""
                    service.close()
                    rows.append(
                        {
                            "session": name,
                            "variant": variant,
                            "method": method,
                            "actions": acted,
                            "words": share(found.user_words, text),
                            "files": share(found.files, text, found.cwd),
                            "errors": share(found.errors, text),
                            "size": f"{after:,} / {before:,} ({after / before:.1%})",
                            "check": check.strip(" :;") or "-",
                        }
                    )
    return rows


def _turns(service: Any, sid: str, first: int, last: int) -> None:
    """Turns first..last-1: a request, an edit and its result (every 50th an error), an answer."""
    from tokend.core.types import TextPart, ToolCallPart, ToolResultPart

    for i in range(first, last):
        append(
            service, sid, "user", [TextPart(f"request {i}: change module {i} " + "please " * 40)]
        )
        edit = {"file_path": f"src/m{i % 300}.py", "old_string": "a", "new_string": "b"}
        append(service, sid, "assistant", [ToolCallPart(f"c{i}", "Edit", edit)])
        said = "updated" if i % 50 else f"error: module {i} failed to import"
        append(service, sid, "user", [ToolResultPart(f"c{i}", "Edit", said)])
        append(service, sid, "assistant", [TextPart(f"done {i} " + "ok " * 60)])


def time_tree() -> dict[str, list[float]]:
    """Seconds of session/compact "summarize" on a 10,000-message session (no boundary), then
    of a second one after 200 more turns (the stored history is read), 3 runs."""
    import time

    from bench.compaction import open_sqlite
    from tokend.service.compaction.tiers import compact

    first, second = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(PERF_RUNS):
            service = open_sqlite(Path(tmp) / f"perf-{run}.sqlite3")
            sid = sessions(service).create_session("gpt-4o").id
            _turns(service, sid, 0, 2_500)
            started = time.perf_counter()
            compact(service, sid, "summarize")
            first.append(time.perf_counter() - started)
            _turns(service, sid, 2_500, 2_700)
            started = time.perf_counter()
            compact(service, sid, "summarize")
            second.append(time.perf_counter() - started)
            service.close()
    return {"first": first, "second": second}


def _run_tree(tree: Path, what: str = "measure") -> Any:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'server'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.compaction_record", what],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1_800,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2_000:])
    return json.loads(done.stdout.splitlines()[-1])


def run() -> str:
    ours, our_times = _run_tree(ROOT), _run_tree(ROOT, "time")
    with baseline_tree(BEFORE_RECORD_REV) as before:
        theirs = _run_tree(before) if before is not None else []
        their_times = _run_tree(before, "time") if before is not None else {}
    out = [
        "### Compaction across a foreign boundary (issue 21)\n",
        "Each session imported whole (the big one holds Claude Code's compact_boundary; it is "
        "also cut at its boundary, and imported with its compaction records removed), then `summarize` or `handoff`; probes as above, "
        "checked in the request context/assemble builds (the child's, for a handoff); size is the "
        "gauge's `usedTokens` (the child's after a handoff) over the session's before. "
        f"`main` is {BEFORE_RECORD_REV} (before this work), measured in the same run.\n",
        "| session | records | method | tree | user words verbatim | files touched present "
        "| exact errors present | size after / before | quality check (detail) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tree, rows in (("this branch", ours), ("main", theirs)):
        for row in rows:
            short = row["session"][:8] if row["session"][0].isdigit() else row["session"]
            out.append(
                f"| {short} | {row['variant']} | {row['method']} ({', '.join(row['actions'])}) "
                f"| {tree} | {row['words']} | {row['files']} | {row['errors']} | {row['size']} "
                f"| {row['check']} |"
            )
    out += [
        '\nWhat reading the whole history costs: session/compact "summarize" on a '
        "10,000-message gpt-4o session on SQLite (no boundary: the live context is the "
        "history), then a second one after 200 more turns (the 10,800 stored messages are "
        f"read), median of {PERF_RUNS} runs, seconds.\n",
        "| compaction | this branch | main | ratio |",
        "|---|---|---|---|",
    ]
    for key, label in (("first", "first (no boundary)"), ("second", "second (after a summary)")):
        mine, theirs_s = statistics.median(our_times[key]), statistics.median(their_times[key])
        out.append(f"| {label} | {mine:.3f} | {theirs_s:.3f} | {mine / theirs_s:.1f}x |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(json.dumps(time_tree() if sys.argv[1:] == ["time"] else measure_tree()))
