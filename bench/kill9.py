"""The kill -9 soak's full count (tests/daemon/kill9_soak.py; `make test` runs a sample of it):
FULL_TRIALS kills of the real `tokend serve` during appends and `session/compact`, each followed
by a restart, in two chains side by side. Counts, not clocks: what the restarted daemons served
against what the clients were told.

`python -m bench.run kill9` prints the section.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tests.daemon.kill9_soak import FULL_TRIALS, soak


def run() -> str:
    base = Path(tempfile.mkdtemp(prefix="tkk-"))  # short: unix socket paths are ~104 bytes
    try:
        results = soak(base, FULL_TRIALS)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = [
        "| chain | kills | compaction replied before the kill | compaction found applied "
        "| append problems | compaction problems |",
        "|---|---|---|---|---|---|",
    ]
    for n, result in enumerate(results):
        appends = ", ".join(
            f"{kind}: {len(items)}" for kind, items in result.append_problems.items()
        )
        compactions = "; ".join(result.compaction_problems[:3])
        rows.append(
            f"| {n} | {result.trials} | {result.kills_with_compaction_replied} "
            f"| {result.compactions_found_applied} | {appends or 'none'} | {compactions or 'none'} |"
        )
    kills = sum(r.trials for r in results)
    clean = all(not r.append_problems and not r.compaction_problems for r in results)
    verdict = (
        "nothing lost, duplicated or half-applied"
        if clean and kills == FULL_TRIALS
        else "PROBLEMS (see the table)"
    )
    return (
        "### kill -9 soak (appends and compactions, then a restart)\n\n"
        f"{kills} of {FULL_TRIALS} kills of the real `tokend serve`, each during 4 clients' "
        "appends and a `session/compact` (half of the kills aimed at the compaction's writes), "
        "then a restart that must serve every acknowledged append exactly once and the "
        f"compacted session exactly as before or as after the compaction: {verdict}. "
        "`make test` runs 8 of these kills (tests/daemon/test_daemon_kill9_consistency.py).\n\n"
        + "\n".join(rows)
        + "\n"
    )
