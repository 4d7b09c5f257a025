"""Found: one connection's 30 MB tool result held every other connection for seconds (a
`daemon/status` waited 3.6 s). Counting and writing now run beside the event loop: another
connection's requests are answered while the big append is still being worked on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def test_other_connections_are_answered_while_a_30_mb_append_is_counted(daemons: Daemons):
    daemons.serve()
    writer, reader = LspClient.unix(paths.socket_path()), LspClient.unix(paths.socket_path())
    writer.initialize("agent")
    reader.initialize("editor")
    watched = reader.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    big_session = writer.request("session/create", {"model": "gpt-4o", "contextWindow": 1_000_000})[
        "result"
    ]["sessionId"]
    # A file read: exempt from the tool-output gates, so the whole result is counted (a
    # bash result this large would be stored whole and shown as a preview instead).
    call = {"type": "toolCall", "callId": "c1", "name": "Read", "input": {"file_path": "b.log"}}
    writer.request(
        "session/append",
        {"sessionId": big_session, "message": {"role": "assistant", "parts": [call]}},
    )
    output = "".join(
        f"src/module_{i:05d}.c:120:7: warning: unused variable 'tmp' [-Wunused-variable]\n"
        for i in range(400_000)
    )
    assert len(output) > 30_000_000
    result = {"type": "toolResult", "callId": "c1", "name": "Read", "output": output}
    writer.send(
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "session/append",
            "params": {"sessionId": big_session, "message": {"role": "tool", "parts": [result]}},
        }
    )
    # The editor's requests, sent after the agent's append, are answered before it.
    answered = 0
    for _ in range(5):
        snapshot = reader.request("budget/snapshot", {"sessionId": watched}, timeout=60)
        assert snapshot["result"]["sessionId"] == watched
        answered += 1
    status = reader.request("daemon/status", timeout=60)["result"]
    assert status["busy"] >= 1  # the agent's append is still in flight
    big = writer.read_message(timeout=120)
    while big.get("id") != 99:  # notifications (the gauge of its own session) may come first
        big = writer.read_message(timeout=120)
    assert "error" in big  # 7.6M tokens: too large, refused with a reason
    assert big["error"]["code"] == -33005 and answered == 5
    writer.close()
    reader.close()
