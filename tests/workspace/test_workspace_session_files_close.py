"""Closing the app cancels the re-measures a file change started (service.workspace.session_files
.Remeasures, built by the composition root): found, a module-level set of tasks that
`App.close` did not know of, which went on after the app had ended its workers and store and
failed there ("re-measuring session ... failed", cannot schedule new futures after shutdown)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tokend.service.app import open_app
from tokend.service.workspace.session_files import change_files


async def test_closing_the_app_cancels_the_remeasures_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = open_app(None, f"sqlite:///{tmp_path}/tokend.sqlite3", serving=True)  # as the daemon
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("the plan: make the build pass\n")
    sid = app.service.sessions.create_session("gpt-4o", workspace_uri=root.as_uri()).id
    await change_files(app.workspaces, sid, ["notes.md"], read_only=False)
    index = app.workspaces.get(root.as_uri())
    assert index is not None
    before = set(asyncio.all_tasks())

    app.workspaces.announce(index, ["notes.md"])  # as the watcher's batch of a save does
    started = set(asyncio.all_tasks()) - before
    assert len(started) == 1, "the save of a listed file re-measures its session"
    caplog.set_level(logging.ERROR)
    app.close()
    await asyncio.wait(started, timeout=10)

    assert all(task.cancelled() for task in started)
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert failed == []
