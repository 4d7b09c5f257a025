"""A file edited and then deleted before any map reads the graph's rows (two watcher batches
in a row): the next map is made, and it is the map a fresh build of the same files makes. On
main bce5b30 the rows to derive again were the edited file's alone (no file refers to what it
defined), gone by then: an empty
array of floats indexed the row totals, and every later map of the workspace failed
(IndexError: arrays used as indices must be of integer (or boolean) type)."""

from __future__ import annotations

from pathlib import Path

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

FOCUS = Focus(frozenset(), frozenset(), "the probe reads the register")


def _tree(root: Path) -> Path:
    root.mkdir()
    for i in range(5):
        (root / f"m{i}.py").write_text(
            f"# the probe {i} reads the register\n"
            f"def probe_{i}(dev):\n    return helper_{(i + 1) % 5}(dev)\n\n"
            f"def helper_{i}(dev):\n    return dev.read({i})\n"
        )
    (root / "alone.py").write_text("# the probe nobody calls\ndef alone(dev):\n    return 1\n")
    return root


def _built(root: Path) -> WorkspaceIndex:
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 0
    index.build()
    assert index.tags.words_ready.wait(30)
    return index


def test_an_edit_then_a_delete_before_any_map(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ws")
    index = _built(root)
    try:
        (root / "alone.py").write_text("# the register, said again\n")
        index.apply_changes([root / "alone.py"])
        (root / "alone.py").unlink()
        index.apply_changes([root / "alone.py"])
        got = index.tags.repo_map(FOCUS, 1024, len, "chars").text
    finally:
        index.close()
    fresh = _built(root)
    try:
        assert got == fresh.tags.repo_map(FOCUS, 1024, len, "chars").text
        assert "alone.py" not in got
    finally:
        fresh.close()
