"""The baseline revision a bench compares with, checked out beside this one for one run.

BASELINE_REV is main before "One owner per session" (5a9021a): where the live calibrator had no
priors, every append ran on the event loop and session/list loaded every session. A bench runs
the same scenario on both trees in separate processes (PYTHONPATH=<tree>/server).
"""

from __future__ import annotations

import contextlib
import shutil
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
        if added.returncode == 0:
            _provide_data(target)
        yield target if added.returncode == 0 else None
    finally:
        if added.returncode == 0:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(target)],
                capture_output=True,
            )


def _provide_data(tree: Path) -> None:
    """The model catalog and vocabularies, for a tree that cannot fetch them: this checkout's
    server/tokend/data/ (scripts/bootstrap takes it from the pinned litellm wheel) copied where
    each tree looks. Trees with a wheel layout (packaged_data.py) read tokend/data/; older ones
    read the litellm package, found here as a data-only namespace package on PYTHONPATH (a
    checkout no longer installs litellm). The same files either way."""
    data = ROOT / "server" / "tokend" / "data"
    if not data.is_dir():
        return
    shutil.copytree(data, tree / "server" / "tokend" / "data", dirs_exist_ok=True)
    legacy = tree / "server" / "litellm"
    vocabularies = legacy / "litellm_core_utils" / "tokenizers"
    vocabularies.mkdir(parents=True, exist_ok=True)
    shutil.copy(data / "model_prices_and_context_window_backup.json", legacy)
    for vocabulary in (data / "tiktoken").iterdir():
        shutil.copy(vocabulary, vocabularies / vocabulary.name)
