"""A connection that goes away closes its open documents (issue 17's fuzz: its 8 MB buffer was
still held, and still counted as the file's text, after the connection had gone).

An editor that crashes or is killed sends no didClose: before, its last unsaved text stayed
the file's overlay in the shared workspace for every other client (and in memory) until the
daemon stopped. Now the file on disk speaks again once the connection is gone, as after
didClose."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _figure(client: LspClient, root: Path, rel: str) -> dict[str, Any]:
    params = {"workspaceUri": root.as_uri(), "paths": [rel]}
    [figure] = client.request("workspace/fileTokens", params, timeout=60)["result"]
    return dict(figure)


@pytest.mark.parametrize("leaves", ["socket closed", "shutdown and exit"])
def test_an_editor_that_leaves_without_did_close_leaves_no_buffer(
    daemons: Daemons, tmp_path: Path, leaves: str
) -> None:
    daemons.serve()
    disk = "def start():\n    return 1\n"
    (tmp_path / "a.py").write_text(disk)
    agent = LspClient.unix(paths.socket_path())
    assert "result" in agent.initialize("agent")
    assert _figure(agent, tmp_path, "a.py")["dirty"] is False
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    unsaved = "def start():\n    return 2  # not saved\n" * 1000
    uri = (tmp_path / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": unsaved}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    figure = _figure(editor, tmp_path, "a.py")  # waits for the buffer (LSP order)
    assert figure["dirty"] is True and figure["bytes"] == len(unsaved)
    assert _figure(agent, tmp_path, "a.py")["dirty"] is True
    if leaves == "socket closed":
        editor.close()
    else:
        assert "result" in editor.request("shutdown")
        editor.notify("exit")
        assert editor.wait_closed()
    deadline = time.monotonic() + 30
    while (figure := _figure(agent, tmp_path, "a.py"))["dirty"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert figure["dirty"] is False and figure["bytes"] == len(disk)
