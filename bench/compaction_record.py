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
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree

BEFORE_RECORD_REV = "5c30823"  # main when issue 21's work was last merged with it
GOAL = "carry on with the same task"


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
    from tokend.service.compaction import compact
    from tokend.service.handoff import handoff

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
                    before = service.state(sid).snapshot.used_tokens
                    if method == "summarize":
                        outcome = compact(service, sid, "summarize")
                        after = service.state(sid).snapshot.used_tokens
                        text = _assembled(service, sid)[1]
                        acted = [a.kind for a in outcome.actions]
                        said = " ".join(a.detail for a in outcome.actions)
                        check = said.split("quality check", 1)[1] if "quality check" in said else ""
                    else:
                        child = asyncio.run(handoff(service, sid, GOAL)).child.id
                        after = service.state(child).snapshot.used_tokens
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


def _run_tree(tree: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'server'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.compaction_record"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1_800,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2_000:])
    rows: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    return rows


def run() -> str:
    ours = _run_tree(ROOT)
    with baseline_tree(BEFORE_RECORD_REV) as before:
        theirs = _run_tree(before) if before is not None else []
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
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(json.dumps(measure_tree()))
