"""What protocol.md tells an agent author, against the real `tokend lsp --standalone`: a
misspelt method's MethodNotFound names the method meant; a tool's result may be sent as role
`tool` or inside a `user` message, and both are assembled alike in either format; `format`
defaults to OpenAI's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.rpc import ProcessClient, RpcError


async def test_an_unknown_method_names_the_closest_one(server: ProcessClient):
    with pytest.raises(RpcError) as raised:
        await server.request("session/craete", {"model": "gpt-4o"})
    assert raised.value.code == -32601
    assert raised.value.message.startswith("Method Not Found: session/craete")
    assert "did you mean session/create?" in raised.value.message
    with pytest.raises(RpcError) as far:
        await server.request("x" * 10_000, None)
    assert far.value.code == -32601 and "did you mean" not in far.value.message
    assert len(far.value.message) < 200
    assert (await server.request("daemon/status", None))["pid"] > 0  # still serving


async def _session_with_a_tool_turn(server: ProcessClient, result_role: str) -> str:
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]

    async def append(role: str, *parts: dict[str, Any]) -> None:
        await server.request(
            "session/append", {"sessionId": sid, "message": {"role": role, "parts": list(parts)}}
        )

    await append("user", {"type": "text", "text": "list the files"})
    await append("assistant", {"type": "toolCall", "callId": "c1", "name": "ls", "input": {}})
    await append(
        result_role, {"type": "toolResult", "callId": "c1", "name": "ls", "output": "a.py b.py"}
    )
    return sid


@pytest.mark.parametrize("fmt", ["openai", "anthropic", None])
async def test_a_tool_result_as_role_tool_or_user_is_assembled_alike(server: ProcessClient, fmt):
    assembled = {}
    for role in ("tool", "user"):
        sid = await _session_with_a_tool_turn(server, role)
        params = {"sessionId": sid} if fmt is None else {"sessionId": sid, "format": fmt}
        assembled[role] = await server.request("context/assemble", params)
    assert assembled["tool"] == assembled["user"]
    messages = assembled["tool"]["messages"]
    if fmt == "anthropic":
        assert messages[-1]["role"] == "user"
        assert messages[-1]["content"][0]["type"] == "tool_result"
    else:  # OpenAI's Chat Completions, the default
        assert messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"}
