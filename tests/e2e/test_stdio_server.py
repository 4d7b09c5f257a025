"""End to end: the real `tokend lsp --standalone` process over real pipes, a real SQLite file."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.e2e.rpc import ProcessClient, RpcError


@pytest.fixture
async def server(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    client = await ProcessClient.spawn(
        "lsp", "--standalone", cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    await client.initialize()
    yield client
    code = await client.shutdown()
    assert code == 0


async def test_append_usage_and_snapshot_agree(server: ProcessClient):
    created = await server.request(
        "session/create", {"model": "gpt-4o", "title": "e2e", "workspaceUri": "file:///tmp/ws"}
    )
    sid = created["sessionId"]
    first = await server.request(
        "session/append",
        {
            "sessionId": sid,
            "message": {"role": "user", "parts": [{"type": "text", "text": "hello world"}]},
        },
    )
    assert first["tokens"] > 2
    change = await server.next_notification("budget/didChange")
    assert change["sessionId"] == sid and change["snapshot"]["estimated"] is True

    await server.request(
        "session/append",
        {
            "sessionId": sid,
            "message": {
                "role": "assistant",
                "parts": [{"type": "text", "text": "Hi! How can I help?"}],
                "usage": {"inputTokens": 1000, "outputTokens": 20, "cacheReadTokens": 500},
            },
        },
    )
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    # anchored on the provider's figures: last input (1000 + 500 cached) + last output (20)
    assert snap["usedTokens"] == 1520
    assert snap["estimated"] is False
    assert sum(b["tokens"] for b in snap["breakdown"]) == snap["usedTokens"]
    assert snap["totals"]["calls"] == 1
    assert snap["cost"]["totalUsd"] > 0
    assert snap["lastCall"]["contextTokens"] == 1500

    listed = await server.request("session/list", {"workspaceUri": "file:///tmp/ws"})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]


async def test_bad_input_gets_stable_codes_and_server_keeps_serving(server: ProcessClient):
    with pytest.raises(RpcError) as unknown_model:
        await server.request("session/create", {"model": "no-such-model-xyz"})
    assert unknown_model.value.code == -32002
    assert ".tokend.toml" in unknown_model.value.message

    with pytest.raises(RpcError) as missing:
        await server.request("budget/snapshot", {"sessionId": "01JD0000000000000000000000"})
    assert missing.value.code == -32001

    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    bad_part = {
        "sessionId": sid,
        "message": {"role": "user", "parts": [{"type": "toolCall", "name": "x"}]},
    }
    with pytest.raises(RpcError) as malformed:
        await server.request("session/append", bad_part)
    assert malformed.value.code == -32602 and "callId" in malformed.value.message

    negative = {
        "sessionId": sid,
        "message": {
            "role": "assistant",
            "parts": [],
            "usage": {"inputTokens": -1, "outputTokens": 3},
        },
    }
    with pytest.raises(RpcError) as neg:
        await server.request("session/append", negative)
    assert neg.value.code == -32602 and "negative" in neg.value.message

    with pytest.raises(RpcError) as missing_field:
        await server.request("session/append", {"sessionId": sid, "message": {"role": "user"}})
    assert missing_field.value.code == -32602

    # nothing half-written: the session is still empty and the server still answers
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["version"] == 0 and snap["usedTokens"] == 0
