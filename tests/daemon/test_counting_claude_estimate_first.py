"""Estimate first, exact later, through the real `tokend serve`: an agent appends a big Claude
message and, at once, a short one; both are answered in order without waiting for the big
message's exact count, and an editor attached to the session hears the gauge move to the exact
figure (budget/didChange). Oracle: ctok's count of each text (content: less the v3 request's
7-token frame; each message adds its measured 20 of framing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ctok
import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

FRAME = 20


def message_tokens(text: str) -> int:
    return int(ctok.token_count(text, "3.0")) - 7 + FRAME


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def messages_basis(snapshot: dict[str, Any]) -> str:
    return next(b["basis"] for b in snapshot["breakdown"] if b["category"] == "messages")


def test_an_editor_hears_the_exact_count_after_the_agents_appends(daemons: Daemons) -> None:
    daemons.serve()
    agent = LspClient.initialized(paths.socket_path(), "agent")
    editor = LspClient.initialized(paths.socket_path(), "editor")
    sid = agent.result("session/create", {"model": "claude-opus-4-6"})["sessionId"]
    editor.result("session/attach", {"sessionId": sid})
    big = "".join(
        f"2026-11-26T10:{i // 60 % 60:02d}:{i % 60:02d} worker-{i % 7} done job {i} in {i % 97} ms\n"
        for i in range(3_000)
    )
    assert 150_000 < len(big) < 250_000
    short = "Which jobs took longest?"
    for request_id, text in ((1001, big), (1002, short)):
        message = {"role": "user", "parts": [{"type": "text", "text": text}]}
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "session/append",
                "params": {"sessionId": sid, "message": message},
            }
        )
    replies: dict[int, dict[str, Any]] = {}
    while len(replies) < 2:
        message = agent.read_message(timeout=60)
        if message.get("id") in (1001, 1002):
            replies[message["id"]] = message["result"]
    assert replies[1001]["version"] < replies[1002]["version"]  # the order they were sent
    assert replies[1001]["tokens"] != message_tokens(big)  # answered with the estimate
    assert replies[1002]["tokens"] == message_tokens(short)  # a short text: exact at once
    exact = message_tokens(big) + message_tokens(short)
    while True:  # the editor hears every change; the last one carries the exact count
        heard = editor.read_message(timeout=60)
        if heard.get("method") != "budget/didChange":
            continue
        snapshot = heard["params"]["snapshot"]
        if snapshot["version"] == 3:
            break
    assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
    agent.close()
    editor.close()
