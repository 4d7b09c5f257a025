"""Through the real daemon, as an editor asks: `repoMap/get` focused on a file of a git workspace
ranks first the file its commits changed with it, though no word links the two (the oracle: the
commits tests/git_history_repo.py makes with git)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.git_history_repo import repository
from tests.lsp_client import LspClient
from tokend.daemon import paths


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def test_the_map_ranks_first_the_file_changed_with_the_focus(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = repository(tmp_path / "repo")
    daemons.serve()
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": root.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    got = editor.request(
        "repoMap/get",
        {"sessionId": session, "budgetTokens": 1024,
         "focus": {"files": ["alpha.py"], "identifiers": []}},
        timeout=120,
    )["result"]  # fmt: skip
    editor.close()
    assert [f["path"] for f in got["files"][:4]] == [
        "zulu.py",
        "bravo.py",
        "charlie.py",
        "delta.py",
    ]
