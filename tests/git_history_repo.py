"""A real git repository made with git for the repo map's `cochange` tests (tests/workspace,
tests/daemon): fourteen files that share no word, changed in known commits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "zulu"]  # fmt: skip


def git(root: Path, *args: str) -> str:
    """git in `root`, with no user's or system's configuration."""
    env = dict(os.environ, HOME=str(root), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid")  # fmt: skip
    done = subprocess.run(["git", "-C", str(root), *args], env=env, capture_output=True, check=True)
    return done.stdout.decode()


def touch(root: Path, *names: str) -> None:
    """A line in each file that shares no word with another file's (no signal but the history
    links them)."""
    for name in names:
        with (root / f"{name}.py").open("a") as f:
            f.write(f"# {name}\n")


def repository(root: Path) -> Path:
    """Fourteen files that share no name; alpha and zulu changed together three times, alpha
    and bravo once with two others, and one sweep of every file (no evidence)."""
    root.mkdir()
    for i, name in enumerate(NAMES):
        (root / f"{name}.py").write_text(f"def {name}_{i}_only(x):\n    return x + {i}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    for n in range(3):
        touch(root, "alpha", "zulu")
        git(root, "commit", "-q", "-am", f"together {n}")
    touch(root, "alpha", "bravo", "charlie", "delta")
    git(root, "commit", "-q", "-am", "four")
    touch(root, *NAMES)
    git(root, "commit", "-q", "-am", "sweep")
    return root
