"""An assistant reply's durationMs is the session's API time; on another role it is refused."""

from __future__ import annotations

import pytest

from tests.lsp_client import ProcessClient, RpcError


async def test_reply_durations_add_up_to_the_api_time(server: ProcessClient):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    user = {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    await server.request("session/append", {"sessionId": sid, "message": user})
    for ms in (1200, 800):
        reply = {
            "role": "assistant",
            "parts": [{"type": "text", "text": "hello"}],
            "usage": {"inputTokens": 100, "outputTokens": 5},
            "durationMs": ms,
        }
        await server.request("session/append", {"sessionId": sid, "message": reply})
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["time"]["apiMs"] == 2000
    with pytest.raises(RpcError) as refused:
        await server.request(
            "session/append", {"sessionId": sid, "message": {**user, "durationMs": 5}}
        )
    assert refused.value.code == -32602 and "durationMs" in refused.value.message
