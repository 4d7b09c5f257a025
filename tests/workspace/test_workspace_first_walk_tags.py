"""The first build's tags begin while the walk goes (issue 22, branch first27): the walk yields
the tree's files in path order, and each chunk goes to the tag workers once the walk has found
it. Main walked the whole tree first (4-6 s on the kernel, one core), the workers waiting."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tokend.adapters import file_index, tag_proc
from tokend.adapters.file_index import walk
from tokend.adapters.ignore_rules import IgnoreRules
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tag_chunks
from tokend.service.workspace.index import WorkspaceIndex

NAMES = ["a.py", "a-b.py", "a0.py", "B.py", "a/x.py", "a/b/y.py", "a/b.py", "ab/z.py", "a.b/w.py",
         "_u.py", "a b/v.py", "é.py", "z/a/b/c.py", "z/a.py", "z/a-/q.py", "Z.py"]  # fmt: skip


def test_the_walk_yields_a_tree_in_the_order_of_its_paths(tmp_path: Path) -> None:
    for name in NAMES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    found = [entry.path for entry in walk(tmp_path, IgnoreRules(tmp_path))]
    assert sorted(found) == sorted(NAMES)
    assert found == sorted(NAMES)  # main: a folder's files first, then its subfolders'


FOLDERS, FILES, CHUNK = 8, 40, 50


def test_the_first_chunks_go_to_the_workers_before_the_walk_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk is held at its last folder until a batch has gone to the tag workers (at most
    10 s): the tags began on the files found before it. Main: nothing is sent before the walk
    ends, so the walk waits the 10 s out."""
    root = tmp_path / "tree"
    for f in range(FOLDERS):
        (root / f"p{f}").mkdir(parents=True)
        for i in range(FILES):
            (root / f"p{f}" / f"m{i:02}.py").write_text(f"def f{f}_{i}(x):\n    return g{i}(x)\n")
    sent = threading.Event()
    held: list[bool] = []
    real_send, real_list = tag_proc.send, file_index.list_folder

    def sending(stream: Any, value: Any) -> None:
        if isinstance(value, list):  # a batch of files
            sent.set()
        real_send(stream, value)

    def listing(root: Path, rules: IgnoreRules, folder: str, **kwargs: Any) -> Any:
        if folder == f"p{FOLDERS - 1}":  # the last folder: the walk waits for a batch sent
            held.append(sent.wait(10))
        return real_list(root, rules, folder, **kwargs)

    monkeypatch.setattr(tag_proc, "send", sending)  # (where a batch is sent)
    monkeypatch.setattr(file_index, "list_folder", listing)
    monkeypatch.setattr(tag_chunks, "CHUNK_FILES", CHUNK)
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 2
    try:
        index.build()
        text = index.tags.repo_map(Focus(), 100_000, len, "chars").text
    finally:
        index.close()
    assert held == [True]  # main: [False], nothing sent in the 10 s the walk waited
    assert len(index.entries()) == FOLDERS * FILES
    assert index.tags.errors == {}
    for f in range(FOLDERS):  # every file's tags reached the graph, those found last too
        for i in range(FILES):
            assert f"def f{f}_{i}(x):" in text


def test_a_walk_that_fails_fails_the_build_and_wakes_its_waiters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error in the walk (now on a thread of its own) is the build's error, as before."""
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    pass\n")

    def broken(*args: object, **kwargs: object) -> Any:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(file_index, "list_folder", broken)
    index = WorkspaceIndex(tmp_path.as_uri(), tmp_path, WorkspaceCache(None), index_ports())
    with pytest.raises(RuntimeError, match="the disk went away"):
        index.build()
    assert index.tags.ready.is_set() and index.tags.failed is not None
    assert [t.name for t in threading.enumerate() if t.name == "tokend-walk"] == []


def test_the_progress_counts_a_file_with_an_unsaved_buffer_once(tmp_path: Path) -> None:
    """An editor's buffer of a file on disk, open before the first build: the tags' last report
    says every file read, of as many files (262dab3 counted the buffer's file twice: "of 4")."""
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    pass\n")
    index = WorkspaceIndex(tmp_path.as_uri(), tmp_path, WorkspaceCache(None), index_ports())
    index.set_overlay("m1.py", "def f1():\n    return 1\n")
    reports: list[str] = []
    try:
        index.build(reports.append)
    finally:
        index.close()
    assert [r for r in reports if "symbols" in r][-1] == "3 files; symbols of 3 of 3 read"
