"""End to end through the real `tokend lsp --standalone`: the budget told to a native model,
budgetInjection passed through, spend warnings as window/showMessage, the refusal's stable
error, and the rate headroom in daemon/status."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError

CONFIG = """
[context]
budget_injection = "auto"

[spend]
session_usd = 0.5
on_limit = "refuse"

[rate]
tpm_limit = 1000000
"""
# Oracle: Anthropic's published Claude Sonnet 4.5 prices ($3 / $15 per million tokens).
USAGE = {"inputTokens": 100_000, "outputTokens": 10_000}


@pytest.fixture
async def server(tmp_path):
    config_dir = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text(CONFIG)
    db = tmp_path / "tokend.sqlite3"
    client = await InProcessClient.start(
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


async def tool_turn(server: InProcessClient, sid: str, n: int) -> None:
    user = {"role": "user", "parts": [{"type": "text", "text": f"run step {n}"}]}
    await server.request("session/append", {"sessionId": sid, "message": user})
    call = {"type": "toolCall", "callId": f"t{n}", "name": "Bash", "input": {"command": "make"}}
    reply = {"role": "assistant", "parts": [call], "usage": USAGE}
    await server.request("session/append", {"sessionId": sid, "message": reply})
    result = {"type": "toolResult", "callId": f"t{n}", "name": "Bash", "output": "ok\n" * 30}
    await server.request(
        "session/append", {"sessionId": sid, "message": {"role": "tool", "parts": [result]}}
    )


async def test_budget_spend_and_rate_through_the_real_server(server: InProcessClient):
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    await server.request("session/attach", {"sessionId": sid})
    await tool_turn(server, sid, 1)  # $0.45 of a $0.50 session limit: 90%
    shown = await server.next_notification("window/showMessage")
    assert shown["type"] == 2  # Warning
    assert shown["message"] == (
        "tokend: spend warning: $0.45 spent by this session, 90% of the $0.50 limit "
        "([spend] session_usd)"
    )

    assembled = await server.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    used, window = snap["usedTokens"], snap["contextWindow"]
    assert assembled["messages"][-1]["content"][-1]["text"] == (
        f"<budget:token_budget>{window}</budget:token_budget>\n"
        f"<system_warning>Token usage: {used}/{window}; {window - used} remaining</system_warning>"
    )
    assert assembled["chunks"][-1]["name"] == "budget"
    assert sum(c["tokens"] for c in assembled["chunks"]) == assembled["totalTokens"]
    off = await server.request(
        "context/assemble", {"sessionId": sid, "format": "anthropic", "budgetInjection": "off"}
    )
    assert "budget" not in [c["name"] for c in off["chunks"]]
    with pytest.raises(RpcError) as bad:
        await server.request("context/assemble", {"sessionId": sid, "budgetInjection": 3})
    assert bad.value.code == -32602

    status = await server.request("daemon/status")
    # Every reported token of the call, well within the last 60 s.
    assert status["rate"] == {
        "tokensPerMinute": 110_000,
        "tpmLimit": 1_000_000,
        "headroomTokens": 890_000,
        "usedPercentage": 11.0,
    }

    await tool_turn(server, sid, 2)  # $0.90: the limit is reached
    shown = await server.next_notification("window/showMessage")
    assert shown["type"] == 1 and "spend limit reached: $0.90" in shown["message"]
    with pytest.raises(RpcError) as refused:
        await server.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    assert refused.value.code == -33020
    assert refused.value.data == {"limit": 0.5, "spent": 0.9, "scope": "session"}
