"""The baseline revision a bench compares with, checked out beside this one for one run.

BASELINE_REV is main before "One owner per session" (5a9021a): where the live calibrator had no
priors, every append ran on the event loop and session/list loaded every session. A bench runs
the same scenario on both trees in separate processes (PYTHONPATH=<tree>/server).
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REV = "5a9021a"
# main before the trust and protocol-promise work (issues 17 and 26): "today's daemon" for their figures.
BEFORE_TRUST_REV = "3cc1d35"


@contextlib.contextmanager
def baseline_tree(rev: str = BASELINE_REV) -> Iterator[Path | None]:
    """A temporary worktree of `rev` (None when this clone lacks that commit)."""
    target = Path(tempfile.mkdtemp(prefix="tokend-baseline-"))
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), rev],
        capture_output=True,
        text=True,
    )
    try:
        yield target if added.returncode == 0 else None
    finally:
        if added.returncode == 0:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(target)],
                capture_output=True,
            )
