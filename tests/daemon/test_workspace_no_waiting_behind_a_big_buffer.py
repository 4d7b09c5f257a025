"""Found (issue 17's fuzz): one editor's `textDocument/didChange` replacing a buffer by 8 MB of
text held every connection of the daemon for 12.2 s: the workspace index took the unsaved
buffer on the event loop (re-tagged it with tree-sitter, then measured it). Now a document
notification only hands the latest text over; tagging and figures run on the workspace's
buffer thread, in order per document, and a request that reads a file's figures waits for
the buffers sent before it (LSP ordering)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

FIGURES = "workspace/didChangeFileTokens"


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _big_python(megabytes: int) -> str:
    """Python with a definition on every line: tree-sitter has plenty to tag."""
    lines, size, i = [], 0, 0
    while size < megabytes << 20:
        line = f"def handler_{i}(request, limit={i}):\n    return request.items[:limit]\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def _editor(root: Path) -> LspClient:
    """A connection following `root`'s figures (workspace/didChangeFileTokens)."""
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    reply = editor.request("workspace/fileTokens", {"workspaceUri": root.as_uri()}, timeout=60)
    assert "result" in reply
    return editor


def _file_tokens(client: LspClient, root: Path, rel: str, timeout: float = 10.0) -> Any:
    params = {"workspaceUri": root.as_uri(), "paths": [rel]}
    [figure] = client.request("workspace/fileTokens", params, timeout=timeout)["result"]
    return figure


def _figures_of(client: LspClient, rel: str) -> list[dict[str, Any]]:
    """The figures of `rel` the client was sent, in order."""
    return [
        f
        for n in client.notifications
        if n.get("method") == FIGURES
        for f in n["params"]["files"]
        if f["path"] == rel
    ]


def _drain(client: LspClient) -> None:
    """Keep every message already waiting on the connection."""
    while True:
        try:
            client.notifications.append(client.read_message(timeout=0.05))
        except TimeoutError:
            return


def _answered_meanwhile(agent: LspClient, editor: LspClient, rel: str) -> list[float]:
    """The agent's `budget/snapshot` round trips (seconds), back to back until the editor has
    the figures of `rel` and 20 were answered."""
    session = agent.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    waits: list[float] = []
    deadline = time.monotonic() + 180
    while (len(waits) < 20 or not _figures_of(editor, rel)) and time.monotonic() < deadline:
        started = time.monotonic()
        reply = agent.request("budget/snapshot", {"sessionId": session}, timeout=180)
        waits.append(time.monotonic() - started)
        assert reply["result"]["sessionId"] == session
        _drain(editor)
    return waits


def test_another_connection_is_answered_while_an_8_mb_buffer_is_taken(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve()
    (tmp_path / "big.py").write_text("x = 1\n")
    editor = _editor(tmp_path)
    agent = LspClient.unix(paths.socket_path())
    assert "result" in agent.initialize("agent")
    text = _big_python(8)
    uri = (tmp_path / "big.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}
    editor.notify("textDocument/didChange", change)
    waits = _answered_meanwhile(agent, editor, "big.py")
    [figure] = _figures_of(editor, "big.py")
    assert figure["dirty"] is True and figure["bytes"] == len(text.encode())
    print(f"{len(waits)} snapshots, longest {max(waits) * 1000:.1f} ms")
    # Outcome: the agent is answered while the buffer is taken (20 times the 50 ms
    # goal, not a tight bound: on the loop, its first request waited for the tags, 2-3 s).
    assert max(waits) < 1.0
    editor.close()
    agent.close()


def test_no_wait_is_as_long_as_the_work_of_a_big_buffer_in_a_session(
    daemons: Daemons, tmp_path: Path
) -> None:
    """The fuzz's case: 8 MB of words on one line, in a file of a session's window (its
    figures and the session's count are redone). Found besides: tree-sitter took 7 s over
    such a buffer and held the loop for most of it (a buffer over the files' size limit is
    now, like such a file, not read for the repo map); and after a big message the daemon
    gave freed memory back (malloc_trim) on the loop, which took 6.9 s beside a thread busy
    allocating (now off the loop)."""
    daemons.serve()
    (tmp_path / "a.py").write_text("x = 1\n")
    editor = _editor(tmp_path)
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    listed = editor.request("session/create", params)["result"]["sessionId"]
    assert "result" in editor.request("files/add", {"sessionId": listed, "paths": ["a.py"]})
    agent = LspClient.unix(paths.socket_path())
    assert "result" in agent.initialize("agent")
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    text = (words * ((8 << 20) // len(words) + 1))[: 8 << 20].decode()
    uri = (tmp_path / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}
    editor.notify("textDocument/didChange", change)
    waits = _answered_meanwhile(agent, editor, "a.py")
    [figure] = _figures_of(editor, "a.py")
    assert figure["dirty"] is True and figure["bytes"] == len(text.encode())
    print(f"{len(waits)} snapshots, longest {max(waits) * 1000:.1f} ms")
    # Outcome: the agent is answered while the buffer is worked on (20 times the 50 ms
    # goal, not a tight bound: on the loop, its first request waited 7 s or more).
    assert max(waits) < 1.0
    editor.close()
    agent.close()


def test_a_request_right_after_did_change_sees_the_new_text(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve()
    (tmp_path / "a.py").write_text("def start():\n    return 1\n")
    editor = _editor(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": _big_python(2)}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    new_text = "def start():\n    return 2  # changed, not saved\n"
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": new_text}]}
    editor.notify("textDocument/didChange", change)
    figure = _file_tokens(editor, tmp_path, "a.py", timeout=60)
    assert figure["dirty"] is True and figure["bytes"] == len(new_text.encode())
    params = {"workspaceUri": uri.rsplit("/", 1)[0], "paths": ["a.py"], "exact": True}
    [exact] = editor.request("workspace/fileTokens", params, timeout=60)["result"]
    assert exact["dirty"] is True and exact["bytes"] == len(new_text.encode())
    editor.close()


def test_did_close_after_a_burst_of_changes_leaves_the_disk_figures(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve()
    disk = "def start():\n    return 1\n"
    (tmp_path / "a.py").write_text(disk)
    editor = _editor(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": disk}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    for version in range(2, 22):
        text = _big_python(1) + f"# edit {version}\n"
        change = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        }
        editor.notify("textDocument/didChange", change)
    editor.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    figure = _file_tokens(editor, tmp_path, "a.py", timeout=120)
    assert figure["dirty"] is False and figure["bytes"] == len(disk.encode())
    _drain(editor)
    sent = _figures_of(editor, "a.py")
    assert sent and sent[-1]["dirty"] is False and sent[-1]["bytes"] == len(disk.encode())
    assert len(sent) <= 21  # never more than one per change; bursts are coalesced
    print(f"20 changes and a close: {len(sent)} figures sent")
    editor.close()
