"""Background bookkeeping waits while a repo map is served (issue 22, service.foreground).

The count of what files say runs on a thread of the daemon's process; a map request shares the
interpreter with it, and beside such a thread a new focus on the kernel took 0.39 s for 0.14
CPU s. It waits between its steps while a map is served. These tests hold a map "served" and
look at the background's own result (the words in the graph) while it is held and after; the
checkpointer's first walk: tests/checkpoints/test_checkpoints_first_walk_priority.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints.conftest import wait_for
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.foreground import Foreground
from tokend.service.workspace import tags as tags_module
from tokend.service.workspace.index import WorkspaceIndex

WAIT_S = 30.0  # how long a thread may take to end on a loaded machine (not a figure)
HELD_S = 600.0  # the background's longest wait, made longer than any test
STILL_S = 2.0  # how long the background is watched doing nothing while a map is served


def _tree(root: Path, files: int = 8) -> Path:
    (root / "pkg").mkdir(parents=True)
    for i in range(files):
        (root / "pkg" / f"m{i}.py").write_text(
            f"# module {i} frobnicates spindles\ndef handler_{i}(value):\n"
            f"    return handler_{(i + 1) % files}(value)\n"
        )
    return root


def test_words_are_counted_only_once_no_map_is_served(tmp_path: Path) -> None:
    """The count of what files say starts after the first build's tags; while a map is
    served it waits (main counted them beside it), then counts them all."""
    tree = _tree(tmp_path / "tree")
    foreground = Foreground(most_s=HELD_S)
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "cache.db"), index_ports(foreground)
    )
    index.tags.pool_workers = 0
    try:
        with foreground.serving():
            build = threading.Thread(target=index.build, daemon=True)
            build.start()
            wait_for("the count to wait for the map", lambda: foreground.paused >= 1)
            assert index.tags.ready.is_set()  # the tags are in: only the words wait
            assert not index.tags.words_ready.wait(STILL_S)  # (main: counted meanwhile)
            assert index.tags._graph.words_version == 0  # no file's words given to the graph
        build.join(WAIT_S)
        assert not build.is_alive()
        assert index.tags.words_ready.is_set()
        graph = index.tags._graph
        assert all(graph.words.offsets[r + 1] > graph.words.offsets[r] for r in range(8))
    finally:
        index.close()


def test_a_map_request_holds_the_background_while_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WorkspaceTags.repo_map marks itself served while it ranks and fits: a background loop
    that yields sees it (main: nothing marked)."""
    tree = _tree(tmp_path / "tree")
    foreground = Foreground(most_s=HELD_S)
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "cache.db"), index_ports(foreground)
    )
    index.tags.pool_workers = 0
    seen: list[int] = []
    real = tags_module.fit_map

    def fitting(*args: Any, **kwargs: Any) -> Any:
        seen.append(foreground._served)  # what a background loop would find now
        return real(*args, **kwargs)

    monkeypatch.setattr(tags_module, "fit_map", fitting)
    try:
        index.build()
        index.tags.repo_map(Focus(files=frozenset({"pkg/m1.py"})), 512, len, "chars")
    finally:
        index.close()
    assert seen == [1]
    assert foreground._served == 0
