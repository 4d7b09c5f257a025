"""Found (issue 17's fuzz): a `textDocument/didChange` giving a .py file of a workspace 1 MB of
prose (just under the 1 MiB a buffer may have to be tagged) held every connection of the daemon
3.6-7.9 s: tree-sitter parsed it on the buffer thread, and py-tree-sitter holds the interpreter
for the whole parse of a bytes object (its error recovery over prose takes seconds), so the
event loop could not run. The parser now reads the source through a callback with a progress
callback (adapters/tags/parser.py): Python runs every few hundred parse steps, and the
interpreter goes to the loop when it asks. The tags are the same."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

PROBE_S = 10.0


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def test_another_connection_is_answered_while_a_buffer_of_prose_is_tagged(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve()
    (tmp_path / "a.py").write_text("def start():\n    return 1\n")
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    reply = editor.request("repoMap/get", {"sessionId": session}, timeout=60)
    assert "start" in reply["result"]["text"]  # the first tags are in: a change is re-tagged
    agent = LspClient.unix(paths.socket_path())
    assert "result" in agent.initialize("agent")
    probed = agent.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    # A nonce first: tags are cached by content (in a cache shared by the tests' daemons).
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    size = (1 << 20) - 2
    text = (os.urandom(8).hex().encode() + words * (size // len(words) + 1))[:size].decode()
    uri = (tmp_path / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    editor.notify("textDocument/didOpen", {"textDocument": doc})
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}
    started = time.monotonic()
    editor.notify("textDocument/didChange", change)
    waits = []
    while time.monotonic() - started < PROBE_S:
        began = time.monotonic()
        reply = agent.request("budget/snapshot", {"sessionId": probed}, timeout=60)
        waits.append(time.monotonic() - began)
        assert reply["result"]["sessionId"] == probed
    print(f"{len(waits)} snapshots, longest {max(waits) * 1000:.1f} ms")
    # Outcome, not a tight bound (10 times the 50 ms goal, on a shared machine whose
    # own noise reaches 0.14 s): on main the longest wait was (most of) the parse itself,
    # 0.9-7.9 s in 6 runs; now 0.08-0.25 s.
    assert max(waits) < 0.5
    # The map still reads the buffer's tags: prose defines nothing, so `start` is gone.
    reply = editor.request("repoMap/get", {"sessionId": session}, timeout=120)
    assert "start" not in reply["result"]["text"]
    editor.close()
    agent.close()
