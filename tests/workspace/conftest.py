"""What the workspace tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tokend.service.app import App, open_app


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    """The app on a fresh store, serving as the daemon's does (the checkpointer walks every
    workspace too)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = open_app(None, f"sqlite:///{tmp_path}/tokend.sqlite3", serving=True)
    yield app
    app.close()
