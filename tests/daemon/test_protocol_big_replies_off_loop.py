"""Found (issue 17's fuzz): a `context/assemble` whose `system` is megabytes of free-form text
is counted and returned, and its reply was encoded (json.dumps holds the interpreter for the
whole of a string) and written on the event loop: every other connection waited for it. A big
reply is now encoded beside the loop a piece at a time and written in slices, in its place
among the connection's messages.

End to end: the reply arrives whole through the outbox's slices. The real `tokend serve`, two connections on its unix socket: while one assembles a 2.6
million-emoji system (a 31 MB reply: JSON escapes each emoji as twelve bytes), the other sends
`budget/snapshot` back to back."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient, frame
from tokend.daemon import paths

EMOJI = 2_600_000  # characters of the big system text (the reply stays under its 32 MiB limit)


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def test_another_connection_does_not_wait_for_a_big_reply(daemons: Daemons) -> None:
    daemons.serve()
    agent = LspClient.initialized(paths.socket_path(), "agent")
    created = {"model": "gpt-4o", "contextWindow": 2_000_000_000}  # the big system fits
    session = agent.result("session/create", created)["sessionId"]
    prober = LspClient.initialized(paths.socket_path(), "prober")
    own = prober.result("session/create", {"model": "gpt-4o"})["sessionId"]
    big = LspClient.unix(paths.socket_path())
    big.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    system = "😀" * EMOJI
    params = {"sessionId": session, "system": system, "format": "anthropic"}
    assemble = {"jsonrpc": "2.0", "id": 2, "method": "context/assemble", "params": params}
    big.send_raw(frame(json.dumps(assemble, ensure_ascii=False).encode()))  # 4 bytes an emoji
    reply: dict[str, Any] | None = None
    waits: list[float] = []
    deadline = time.monotonic() + 300
    while reply is None and time.monotonic() < deadline:
        started = time.monotonic()
        assert prober.result("budget/snapshot", {"sessionId": own})["sessionId"] == own
        waits.append(time.monotonic() - started)
        while (message := big.poll()) is not None:
            if message.get("id") == 2:
                reply = message
    assert reply is not None and "result" in reply, str(reply)[:300]
    assert reply["result"]["system"][0]["text"] == system  # what the client sent, whole
    print(f"{len(waits)} snapshots meanwhile, longest {max(waits) * 1000:.0f} ms")
    # Outcome: the other connection is answered throughout (20 times the 50 ms goal,
    # not a tight bound: the machine is shared; what the loop does meanwhile is judged by its
    # turns in tests/lsp/test_protocol_big_reply_beside_loop.py, and timed by the fuzz bench).
    assert max(waits) < 1.0
    big.close()
    agent.close()
    prober.close()
    assert os.path.exists(paths.socket_path())
