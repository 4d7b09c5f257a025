"""The rank's BLAS is limited to one thread by the workspace's build, not by its first map
request (service/workspace/registry.py): threadpoolctl's look at the loaded libraries (6 ms of
CPU, 10 ms of wall time) was paid by the first `context/assemble` that carried a map (issue
18's stall_assemble); the build's own solve (the map's warm-up) now runs limited too."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokend.service.app import App, open_app
from tokend.service.workspace.closing import WorkspaceUser


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = open_app(None, f"sqlite:///{tmp_path}/tokend.sqlite3", serving=True)  # as the daemon
    yield app
    app.close()


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
