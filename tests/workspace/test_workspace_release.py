"""A released workspace leaves nothing of itself behind: its index, tags and threads are gone
(found: every opened workspace was kept, with its watches and threads, for the daemon's life)."""

from __future__ import annotations

import gc
import threading
import weakref
from pathlib import Path

from tokend.service.app import App
from tokend.service.workspace.closing import WorkspaceUser


def _tree(root: Path) -> Path:
    for i in range(60):
        folder = root / f"pkg{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i}.py").write_text(f"def f_{i}():\n    return g_{i % 7}()\n")
    return root


def test_the_last_user_leaving_frees_the_index_and_ends_its_threads(
    app: App, tmp_path: Path
) -> None:
    workspaces = app.workspaces
    root = _tree(tmp_path / "tree")
    first, second = WorkspaceUser("a"), WorkspaceUser("b")
    index = workspaces.open(root.as_uri(), user=first)
    assert workspaces.open(root.as_uri(), user=second) is index
    assert index.tags.ready.wait(30)
    held = weakref.ref(index)
    del index

    workspaces.let_go(first)
    assert workspaces.get(root.as_uri()) is held(), "released while a user was left"
    workspaces.let_go(second)
    assert workspaces.get(root.as_uri()) is None
    for reaper in [t for t in threading.enumerate() if t.name == "tokend-release"]:
        reaper.join(10)
    gc.collect()
    assert held() is None, [type(r).__name__ for r in gc.get_referrers(held())]
    names = {t.name.split("_")[0] for t in threading.enumerate()}
    assert not names & {"tokend-index", "tokend-watch", "tokend-batch-hooks", "tokend-poll"}
