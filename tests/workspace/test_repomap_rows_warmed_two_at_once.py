"""The graph's rows are derived two chunks at a time when the first build warms it (issue 22,
branch first27): after the kernel's tags the first map waited 2-3 s for them on one core, the
other idle. The rows are the same as derived one chunk after the other."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap import edges
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

FILES = 60


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(FILES):
        calls = "\n".join(f"    helper_{(i * 7 + k) % FILES}(x)" for k in range(3))
        (root / f"m{i:02}.py").write_text(f"def helper_{i}(x):\n{calls}\n    return x\n")
    return root


def test_the_first_build_derives_two_chunks_of_rows_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first two chunks meet (a barrier of two, 10 s at most): they run at once. Main: one
    chunk after the other, so the first waits the 10 s out alone."""
    monkeypatch.setattr(edges, "ROWS_PER_CHUNK", 8)
    met: list[bool] = []
    barrier = threading.Barrier(2, timeout=10)
    real = edges._derive_chunk

    def meeting(*args: Any, **kwargs: Any) -> Any:
        if len(met) < 2:
            try:
                barrier.wait()
                met.append(True)
            except threading.BrokenBarrierError:
                met.append(False)
        return real(*args, **kwargs)

    monkeypatch.setattr(edges, "_derive_chunk", meeting)
    root = _tree(tmp_path)
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports())
    try:
        index.build()
        graph = index.tags._graph
        warmed = graph.edges()
        text = index.tags.repo_map(Focus(), 4096, len, "chars").text
    finally:
        index.close()
    assert met[:1] == [True]  # main: [False] (alone at the barrier)
    monkeypatch.setattr(edges, "_derive_chunk", real)
    one_by_one = edges.derive_rows(graph.table, np.arange(FILES), graph._links(np.arange(FILES)))
    for name in ("offsets", "targets", "weights", "totals"):
        assert np.array_equal(getattr(warmed, name), getattr(one_by_one, name)), name
    assert "def helper_0(x):" in text
