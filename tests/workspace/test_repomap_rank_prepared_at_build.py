"""The rank's BLAS is limited to one thread by the workspace's build, not by its first map
request (service/workspace/registry.py): threadpoolctl's look at the loaded libraries (6 ms of
CPU, 10 ms of wall time) was paid by the first `context/assemble` that carried a map (issue
18's stall_assemble); the build's own solve (the map's warm-up) now runs limited too."""

from __future__ import annotations

import threading
from pathlib import Path

from tokend.service.app import App
from tokend.service.workspace.closing import WorkspaceUser


def test_the_build_prepares_the_rank_before_the_map_is_ready(app: App, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    prepared: list[tuple[str, bool]] = []  # (thread, whether the map's tags were ready)
    workspaces = app.workspaces
    real = workspaces.prepare_rank

    opened = workspaces.get(root.as_uri())

    def noted() -> None:
        index = workspaces.get(root.as_uri())
        ready = index is not None and index.tags.ready.is_set()
        prepared.append((threading.current_thread().name, ready))
        real()

    assert opened is None
    workspaces.prepare_rank = noted  # type: ignore[method-assign]
    index = workspaces.open(root.as_uri(), user=WorkspaceUser("editor"))
    assert index.tags.ready.wait(60)
    assert prepared and prepared[0] == ("tokend-index", False)  # main: not until a map is asked


def test_the_graph_is_prepared_before_the_map_is_said_to_be_ready(tmp_path: Path) -> None:
    """A map request let through by `tags.ready` finds the graph's rows and solve made: the
    first `context/assemble` carrying a map waited on the index's lock for the warm-up that
    followed `ready` (SQLAlchemy: 0.07-0.09 CPU s of its 0.33 s)."""
    from tokend.adapters.workspace_cache import WorkspaceCache
    from tokend.service.app_workspaces import index_ports
    from tokend.service.workspace.index import WorkspaceIndex

    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_text("from b import g\n\ndef f():\n    return g()\n")
    (root / "b.py").write_text("def g():\n    return 1\n")
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports())
    graph = index.tags._graph
    seen: list[bool] = []  # whether the graph was prepared when `ready` was set

    class Noting(threading.Event):
        def set(self) -> None:
            seen.append(graph._ranking is not None and graph._ranking[0] == graph.graph_version)
            super().set()

    index.tags.ready = Noting()
    try:
        index.build()
    finally:
        index.close()
    assert seen and seen[0]  # main: set before the warm-up
