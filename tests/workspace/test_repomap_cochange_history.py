"""The repo map reads the workspace's git history (adapters.git_history, core.repomap.cochange):
a real repository made here with git, a real WorkspaceIndex with the daemon's adapters. The
oracle is the commits this test makes: the file changed with the focus in most of them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tokend.adapters.git_history import read_history
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "zulu"]  # fmt: skip


def git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "HOME": str(root),
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin"}  # fmt: skip
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


def first_files(root: Path, cache: Path, focus: str) -> list[str]:
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(cache), index_ports())
    index.build()
    fitted = index.tags.repo_map(Focus(files=frozenset({focus})), 4096, len, "chars")
    index.close()
    return [path for path, _ in fitted.ranked]


def test_the_file_changed_with_the_focus_comes_first(tmp_path: Path) -> None:
    root = repository(tmp_path / "repo")
    got = first_files(root, tmp_path / "cache.sqlite3", "alpha.py")
    assert got[:4] == ["zulu.py", "bravo.py", "charlie.py", "delta.py"]
    plain = tmp_path / "plain"  # the same files without their history
    shutil.copytree(root, plain, ignore=shutil.ignore_patterns(".git"))
    assert first_files(plain, tmp_path / "plain.sqlite3", "alpha.py")[0] != "zulu.py"


def test_the_history_is_read_relative_to_a_folder_inside_the_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    for name in ("top.py", "sub/a.py", "sub/b.py"):
        (root / name).write_text("x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    (root / "top.py").write_text("x = 2\n")
    git(root, "commit", "-q", "-am", "outside the folder")
    (root / "sub/b.py").write_text("x = 3\n")
    git(root, "commit", "-q", "-am", "inside")
    assert read_history(root / "sub") == [["b.py"], ["a.py", "b.py"]]
    assert read_history(root) == [["sub/b.py"], ["top.py"], ["sub/a.py", "sub/b.py", "top.py"]]
    assert read_history(root, limit=1) == [["sub/b.py"]]
    first = git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert read_history(tmp_path, git_dir=root / ".git", rev=f"{first}") == [
        ["sub/a.py", "sub/b.py", "top.py"]
    ]


def test_no_repository_or_no_commit_is_no_history(tmp_path: Path) -> None:
    assert read_history(tmp_path) == []
    git(tmp_path, "init", "-q")
    assert read_history(tmp_path) == []
