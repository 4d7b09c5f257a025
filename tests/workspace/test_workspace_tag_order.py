"""A refresh of a big tree's tags never sorts its paths in one call (issue 22): sorted() of
100,000 paths held the interpreter 75 ms on the daemon's build thread (py-spy, bench
scale_tree), every other connection waiting. The paths are sorted a piece at a time and merged,
in the same order."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import RepoGraph
from tokend.core.workspace.fileclass import FileEntry
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import index as index_module
from tokend.service.workspace import tag_chunks, tags
from tokend.service.workspace.entries import pack
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.tags import WorkspaceTags

PATHS = 12_000


def _sorts_counted(monkeypatch: pytest.MonkeyPatch, *modules: object) -> list[int]:
    """The length of every sorted() call the modules make, from now on."""
    sizes: list[int] = []

    def counted(items, **kwargs):  # type: ignore[no-untyped-def]
        done = builtins.sorted(items, **kwargs)
        sizes.append(len(done))
        return done

    for module in modules:
        monkeypatch.setattr(module, "sorted", counted, raising=False)
    return sizes


def test_a_refresh_sorts_its_paths_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = _sorts_counted(monkeypatch, tags, tag_chunks)
    handed: list[str] = []
    workspace = WorkspaceTags(tmp_path, WorkspaceCache(None), index_ports())
    real = RepoGraph.set_files

    def kept(graph, files, *args, **kwargs):  # type: ignore[no-untyped-def]
        handed.extend(files)
        return real(graph, files, *args, **kwargs)

    monkeypatch.setattr(RepoGraph, "set_files", kept)
    paths = {f"pkg{i % 97}/mod{i}.py" for i in range(PATHS)}
    workspace.refresh_paths(paths, {}, {})
    assert max(sizes) <= PATHS // 2  # main: one call of 12,000 (now SORT_PIECE, 4,096)
    assert handed == sorted(paths)  # the graph is handed the paths in order


def test_the_figures_of_a_big_tree_are_sorted_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`workspace/fileTokens` for every file: the reply's paths in order, never sorted in one
    call on the thread that writes the reply (py-spy: 55 ms for 100,000 paths)."""
    sizes = _sorts_counted(monkeypatch, index_module, tag_chunks)
    index = WorkspaceIndex(tmp_path.as_uri(), tmp_path, WorkspaceCache(None), index_ports())
    paths = [f"pkg{i % 97}/mod{i}.py" for i in range(PATHS)]
    index._entries = {p: pack(FileEntry(p, 10, 1, "code", 3)) for p in paths}
    shown = [figure.path for figure in index.each_figure(None, None, None)]
    assert shown == builtins.sorted(paths)
    assert max(sizes) <= PATHS // 2  # main: one call of 12,000
