"""tokend.client (Client and AsyncClient) against the real daemon it starts itself, as `tokend
lsp` would: an agent's turn in a few calls, the gauge it is told of, and an append retried over
a new connection after the old one broke, stored once. Oracles: the daemon's own replies to
another plain connection (session/messages, budget/snapshot) and the usage the test reported."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.client import AsyncClient, Client
from tokend.daemon.paths import socket_path

TOOL = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
USAGE = {"inputTokens": 1000, "outputTokens": 20, "cacheReadTokens": 500}


def _messages(sid: str) -> list[dict[str, Any]]:
    other = LspClient.unix(socket_path())
    try:
        assert "result" in other.initialize("observer")
        reply = other.request("session/messages", {"sessionId": sid}, timeout=30)
        return list(reply["result"]["messages"])
    finally:
        other.close()


def test_an_agent_turn_with_the_sync_client_and_a_retried_append(monkeypatch, tmp_path):
    workspace = tmp_path.as_uri()
    with real_daemons(monkeypatch):
        assert not socket_path().exists()
        with Client.connect("agent", workspace_uri=workspace) as tokend:  # starts the daemon
            heard: list[dict[str, Any]] = []
            tokend.on("budget/didChange", lambda params: 1 / 0)  # a handler's bug: read on
            tokend.on("budget/didChange", heard.append)
            sid = tokend.create_session("gpt-4o")
            tokend.append(sid, "user", [{"type": "text", "text": "list the files"}])
            request = tokend.assemble(sid, format="anthropic", tools=[TOOL])
            assert request["tools"][0]["name"] == "ls"  # converted to Anthropic's shape
            call = {"type": "toolCall", "callId": "c1", "name": "ls", "input": {}}
            first = tokend.append(sid, "assistant", [call], usage=USAGE, message_id="reply-1")
            assert tokend.snapshot(sid)["usedTokens"] == 1000 + 500 + 20
            assert heard and {h["sessionId"] for h in heard} == {sid}

            # the connection breaks; the same append again connects anew and is stored once
            assert tokend._sock is not None
            tokend._sock.shutdown(socket.SHUT_RDWR)
            again = tokend.append(sid, "assistant", [call], usage=USAGE, message_id="reply-1")
            assert again == first
            result = {"type": "toolResult", "callId": "c1", "name": "ls", "output": "a.py"}
            tokend.append(sid, "tool", [result])
        stored = _messages(sid)
        assert [m["role"] for m in stored] == ["user", "assistant", "tool"]


async def test_an_agent_turn_with_the_async_client_and_a_retried_append(monkeypatch, tmp_path):
    with real_daemons(monkeypatch):
        async with await AsyncClient.connect("agent", workspace_uri=tmp_path.as_uri()) as tokend:
            heard: list[dict[str, Any]] = []
            tokend.on("budget/didChange", heard.append)
            sid = await tokend.create_session("gpt-4o")
            await tokend.append(sid, "user", [{"type": "text", "text": "list the files"}])
            request = await tokend.assemble(sid, tools=[TOOL])
            assert request["tools"] == [TOOL] and request["messages"][-1]["role"] == "user"
            text = [{"type": "text", "text": "There are two."}]
            first = await tokend.append(sid, "assistant", text, usage=USAGE, message_id="r-1")
            assert (await tokend.snapshot(sid))["usedTokens"] == 1520
            assert {h["sessionId"] for h in heard} == {sid}

            assert tokend._writer is not None
            tokend._writer.transport.abort()  # the connection breaks under the client
            again = await tokend.append(sid, "assistant", text, usage=USAGE, message_id="r-1")
            assert again == first
        stored = _messages(sid)
        assert [m["role"] for m in stored] == ["user", "assistant"]


def test_the_agent_loop_in_protocol_md_runs(monkeypatch, tmp_path):
    """protocol.md's loop, as printed there, with a model that calls one tool then answers."""
    doc = (Path(__file__).resolve().parents[2] / "protocol.md").read_text()
    loop = doc.split("A whole agent loop", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(loop.strip().splitlines()) <= 15
    replies = iter(
        [
            [{"type": "toolCall", "callId": "c1", "name": "ls", "input": {}}],
            [{"type": "text", "text": "Two files."}],
        ]
    )
    seen: list[dict[str, Any]] = []

    def call_model(request: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        seen.append(request)
        return next(replies), {"inputTokens": request["totalTokens"], "outputTokens": 12}

    def run_tool(call: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "toolResult",
            "callId": call["callId"],
            "name": call["name"],
            "output": "a b",
        }

    anthropic_tool = {"name": "ls", "input_schema": {"type": "object"}}
    names = {"call_model": call_model, "run_tool": run_tool, "task": "list the files"}
    names |= {"SYSTEM": "You are terse.", "TOOLS": [anthropic_tool]}
    with real_daemons(monkeypatch):
        exec(loop.replace("file:///home/me/project", tmp_path.as_uri()), names)  # noqa: S102
        sid = names["sid"]
        assert [m["role"] for m in _messages(sid)] == ["user", "assistant", "tool", "assistant"]
    assert len(seen) == 2 and seen[1]["messages"][-1]["content"][0]["type"] == "tool_result"
