"""A released workspace's files are freed at once, not at the collector's next full pass.

Found (issue 17, a heap walk of the daemon after a 100,000-file workspace was opened and its
connection closed, twice): 202,762 objects waited in reference cycles for the collector, among
them 200,000 FileEntry (the daemon makes full passes rare: daemon/process.py). The index and its
threads' objects refer to each other; once its threads have ended, the index now drops what it
holds (WorkspaceIndex.forget). Here the collector is off, as it is between those passes."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from tokend.core.repomap.graph import RepoGraph
from tokend.service.app import App
from tokend.service.workspace.closing import WorkspaceUser
from tokend.service.workspace.index import WorkspaceIndex

FILES = 300


def _entries_of(root: Path) -> int:
    """Files held by workspace indexes (their entries are plain tuples the collector does not
    track: test_workspace_index_untracked; the indexes themselves it does)."""
    indexes = [o for o in gc.get_objects() if isinstance(o, WorkspaceIndex)]
    return sum(sum(1 for p in index.entries() if p.startswith("pkg")) for index in indexes)


def _tagged_files() -> int:
    """Files held by repo-map graphs: the released workspace's tags."""
    return sum(
        sum(1 for p in o.paths if p.startswith("pkg"))
        for o in gc.get_objects()
        if isinstance(o, RepoGraph)
    )


def test_a_released_workspace_holds_no_file_entry(app: App, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    for i in range(FILES):
        folder = root / f"pkg{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i}.py").write_text(f"def f_{i}():\n    return {i}\n")
    workspaces = app.workspaces
    user = WorkspaceUser("editor")
    index = workspaces.open(root.as_uri(), user=user)
    assert index.ready.wait(60) and index.tags.ready.wait(60)
    assert len(index.entries()) == FILES
    del index
    gc.collect()
    gc.disable()
    try:
        assert _entries_of(root) >= FILES and _tagged_files() >= FILES
        workspaces.let_go(user)
        for reaper in [t for t in threading.enumerate() if t.name == "tokend-release"]:
            reaper.join(30)
        assert _entries_of(root) == 0
        assert _tagged_files() == 0
    finally:
        gc.enable()
