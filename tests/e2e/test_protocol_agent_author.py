"""What protocol.md tells an agent author, against the real `tokend lsp --standalone`: a
misspelt method's MethodNotFound names the method meant; a tool's result may be sent as role
`tool` or inside a `user` message, and both are assembled alike in either format; `format`
defaults to OpenAI's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lsp_client import ProcessClient, RpcError


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


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
OPENAI_CHAT = {
    "type": "function",
    "function": {"name": "weather", "description": "today's", "parameters": WEATHER_SCHEMA},
}
OPENAI_RESPONSES = {
    "type": "function",
    "name": "weather",
    "description": "today's",
    "parameters": WEATHER_SCHEMA,
}
ANTHROPIC = {"name": "weather", "description": "today's", "input_schema": WEATHER_SCHEMA}


async def _tools(server: ProcessClient, fmt: str, tools: list[dict[str, Any]]) -> Any:
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    user = {"role": "user", "parts": [{"type": "text", "text": "weather in Oslo?"}]}
    await server.request("session/append", {"sessionId": sid, "message": user})
    return await server.request(
        "context/assemble", {"sessionId": sid, "format": fmt, "tools": tools}
    )


async def test_tools_come_back_in_the_shape_of_the_format_asked_for(server: ProcessClient):
    for tool in (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC):
        anthropic = await _tools(server, "anthropic", [tool])
        assert anthropic["tools"] == [{**ANTHROPIC, "cache_control": {"type": "ephemeral"}}]
        openai = await _tools(server, "openai", [tool])
        assert openai["tools"] == [OPENAI_CHAT]
    # the count is the same whichever shape the client sent
    sent_openai = await _tools(server, "anthropic", [OPENAI_CHAT])
    sent_anthropic = await _tools(server, "anthropic", [ANTHROPIC])
    assert sent_openai["totalTokens"] == sent_anthropic["totalTokens"]


async def test_a_tool_of_neither_shape_or_a_server_tool_for_openai_is_refused(
    server: ProcessClient,
):
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    kept = await _tools(server, "anthropic", [server_tool])
    assert kept["tools"] == [{**server_tool, "cache_control": {"type": "ephemeral"}}]
    with pytest.raises(RpcError) as refused:
        await _tools(server, "openai", [ANTHROPIC, server_tool])
    assert refused.value.code == -32602
    assert "tools[1] is Anthropic's server tool web_search_20250305" in refused.value.message
    with pytest.raises(RpcError) as neither:
        await _tools(server, "anthropic", [{"description": "no name"}])
    assert neither.value.code == -32602 and "tools[0] is neither" in neither.value.message
