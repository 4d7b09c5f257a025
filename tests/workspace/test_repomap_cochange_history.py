"""The repo map reads the workspace's git history (adapters.git_history, core.repomap.cochange):
a real repository made here with git, a real WorkspaceIndex with the daemon's adapters. The
oracle is the commits this test makes: the file changed with the focus in most of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.git_history_repo import git, repository, touch
from tokend.adapters.git_history import history_mark, read_history
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex


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


def test_no_repository_no_commit_or_no_git_is_no_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert read_history(tmp_path) == []
    git(tmp_path, "init", "-q")
    assert read_history(tmp_path) == []
    root = repository(tmp_path / "repo")
    assert read_history(root)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))  # a machine without git
    assert read_history(root) == []


def test_a_commit_made_after_the_first_map_counts_from_a_later_map(tmp_path: Path) -> None:
    root = repository(tmp_path / "repo")
    index = WorkspaceIndex(
        root.as_uri(), root, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    index.build()
    focus = Focus(files=frozenset({"alpha.py"}))

    def first() -> str:
        return index.tags.repo_map(focus, 4096, len, "chars").ranked[0][0]

    assert first() == "zulu.py"  # three commits with alpha
    for _ in range(4):  # four with mike now: mike's 4 over zulu's 3
        touch(root, "alpha", "mike")
        git(root, "commit", "-q", "-am", "mike")
    assert first() == "zulu.py"  # this map saw the history move: read again, for a later map
    index.tags.history.wait()
    assert first() == "mike.py"
    index.close()


def test_the_mark_moves_with_a_commit_in_the_repository_or_a_worktree(tmp_path: Path) -> None:
    assert history_mark(tmp_path) is None
    root = repository(tmp_path / "repo")
    before = history_mark(root / "sub-folder-not-made")  # (a folder inside: the same repository)
    assert before is not None and before == history_mark(root)
    touch(root, "alpha")
    git(root, "commit", "-q", "-am", "one more")
    assert history_mark(root) not in (None, before)
    git(root, "worktree", "add", "-q", str(tmp_path / "tree"))
    tree, was = tmp_path / "tree", history_mark(tmp_path / "tree")
    touch(tree, "bravo")
    git(tree, "commit", "-q", "-am", "in the worktree")
    assert was is not None and history_mark(tree) not in (None, was)
    assert read_history(tree)[0] == ["bravo.py"]
