"""A workspace's first build gives the memory it freed back to the system (issue 22): it reads
every source and takes every file's tags in pieces, and glibc keeps what was freed in its heap
(after the kernel's build, 278 of the heap's 416 MiB were free; malloc_trim took the process
from 567 to 397 MiB). Once a refresh's tag workers end, the heap is trimmed, once; a small
refresh (a save, no workers) leaves it alone. The first build's two passes (its tags, then the
words of its files) each end their workers and trim. Counted: who asked for the trim, how
often."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokend.adapters import heap
from tokend.adapters.tag_workers import POOL_MIN_FILES
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex


def _trims_counted(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    done: list[bool] = []
    real = heap.release_freed_memory

    def counted() -> bool:
        done.append(real())
        return done[-1]

    monkeypatch.setattr(heap, "release_freed_memory", counted)
    return done


def _tree(tmp_path: Path, files: int) -> Path:
    tree = tmp_path / "tree"
    (tree / "gen").mkdir(parents=True)
    for i in range(files):
        (tree / "gen" / f"g{i}.py").write_text(f"def gen_{i}(x):\n    return load_{i % 7}(x)\n")
    return tree


def test_a_build_with_tag_workers_trims_the_heap_once_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, POOL_MIN_FILES + 50)
    trims = _trims_counted(monkeypatch)
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.db"), index_ports())
    index.tags.pool_workers = 2
    try:
        index.build()
        assert index.tags.defines("gen_7")  # the workers' tags are in the graph
    finally:
        index.close()
    assert trims == [True, True]  # the tags, the words (main: no trim, then one)


def test_a_small_refresh_does_not_trim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, 5)
    trims = _trims_counted(monkeypatch)
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.db"), index_ports())
    try:
        index.build()
        assert index.tags.defines("gen_3")
    finally:
        index.close()
    assert trims == []
