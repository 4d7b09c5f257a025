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


@contextlib.contextmanager
def baseline_tree() -> Iterator[Path | None]:
    """A temporary worktree of BASELINE_REV (None when this clone lacks that commit)."""
    target = Path(tempfile.mkdtemp(prefix="tokend-baseline-"))
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), BASELINE_REV],
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
