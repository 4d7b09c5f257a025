"""A workspace's git history as the repo map's `cochange` signal reads it (core.repomap.cochange):
the paths each of the newest commits changed, relative to the workspace folder.

`git log` along first parents, merges left out, renames not followed (a rename is a delete and
an add), run in the workspace folder: a folder inside a larger repository reads the commits that
changed something under it, its paths relative to it (`--relative`, `-- .`). No git, no repository, a
history git cannot read within TIMEOUT, or a stop: no history (the signal is left out, the map
is made as without it). The repository's own configuration runs nothing here: no pager, no
signature checks, no fsmonitor hook, no external diff or text conversion.

`history_mark`: what says the history moved since it was read (a commit, a checkout, a pull, a
reset): the size and time of the repository's log of HEAD (`logs/HEAD`; without one, of HEAD
itself), found without running git (the first `.git` of the folder and those above it, a folder
or a worktree's `gitdir:` file); a stat, cheap enough to look at for each map.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from pathlib import Path

from tokend.core.repomap.cochange import COMMITS

log = logging.getLogger(__name__)

TIMEOUT = 20.0  # seconds git may take (a first-parent walk of 5,000 commits: well under 1 s)
_POLL = 0.1  # how often a stop is looked for while git runs
_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "core.quotePath=false",
)


def read_history(root: Path, stopping: threading.Event | None = None, *,
                 git_dir: Path | None = None, rev: str = "HEAD",
                 limit: int = COMMITS) -> list[list[str]]:  # fmt: skip
    """The newest `limit` commits' changed paths up to `rev` (newest first). `git_dir`: read
    that repository instead of the one `root` is in (its paths as they are: the evaluation's
    pinned histories, bench.repomap_eval)."""
    where = ["--git-dir", str(git_dir)] if git_dir else ["-C", str(root)]
    args = ["git", "--no-pager", *where, *_SAFE, "log", "--first-parent", "--no-merges",
            "--no-renames", "--no-ext-diff", "--no-textconv", "--name-only", "--format=%x01",
            *([] if git_dir else ["--relative"]), "-n", str(limit), rev, "--",
            *([] if git_dir else ["."])]  # fmt: skip
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)  # fmt: skip
    except OSError as exc:  # no git
        log.debug("no history for %s: %s", root, exc)
        return []
    out = _output(proc, stopping)
    if out is None:
        return []
    blocks = out.decode("utf-8", "surrogateescape").split("\x01")[1:]
    return [paths for block in blocks if (paths := [line for line in block.split("\n") if line])]


def _output(proc: subprocess.Popen[bytes], stopping: threading.Event | None) -> bytes | None:
    """git's output, or None: it failed (not a repository, no commit), took over TIMEOUT, or
    a stop came first (git is killed then)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            out, _ = proc.communicate(timeout=_POLL)
            return out if proc.returncode == 0 else None
        except subprocess.TimeoutExpired:
            if (stopping is not None and stopping.is_set()) or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                return None


def history_mark(root: Path) -> tuple[int, int] | None:
    """The (size, mtime in ns) of the log of HEAD of the repository `root` is in; None: none."""
    git_dir = _git_dir(root)
    for path in ((git_dir / "logs" / "HEAD"), (git_dir / "HEAD")) if git_dir else ():
        try:
            st = path.stat()
        except OSError:
            continue
        return st.st_size, st.st_mtime_ns
    return None


def _git_dir(root: Path) -> Path | None:
    for folder in (root, *root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():  # a worktree or a submodule: "gitdir: PATH"
            try:
                text = dot.read_text("utf-8", "replace").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                return (folder / text.removeprefix("gitdir:").strip()).resolve()
            return None
    return None
