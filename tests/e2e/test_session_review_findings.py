"""Regressions for what a review of the live service found, through the real `tokend lsp
--standalone` process. Oracles: tiktoken's counts of what was rendered, the provider figures a
test reports, the freed tokens a prune announces."""

from __future__ import annotations

import json

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError
from tokend.adapters.tokenizers import load_encoding

O200K = load_encoding("o200k_base")


def tokens(text: str) -> int:
    return len(O200K.encode(text))


def text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


async def append(server: InProcessClient, sid: str, role: str, *parts, usage=None) -> dict:
    message: dict = {"role": role, "parts": list(parts)}
    if usage is not None:
        message["usage"] = usage
    return await server.request("session/append", {"sessionId": sid, "message": message})


JSON_TEXT = json.dumps(
    [
        {"id": i, "name": f"item-{i}", "tags": ["alpha", "beta"], "price": i * 1.25}
        for i in range(120)
    ]
)
CJK_TEXT = "上下文窗口的令牌数量决定了模型能看到多少内容，压缩会保留用户的原话。" * 40
LOG_TEXT = "".join(
    f"2026-11-23T10:{i % 60:02d}:07.123Z INFO  worker-{i % 7} request id={i:06d} status=200 took={i % 97}ms\n"
    for i in range(90)
)


@pytest.mark.parametrize("sample", [JSON_TEXT, CJK_TEXT, LOG_TEXT], ids=["json", "cjk", "log"])
async def test_a_confirmed_estimate_stays_put_after_the_provider_sample(server, sample):
    """Found: the live calibrator started without the estimator's priors, so one provider
    sample that CONFIRMED the estimate moved JSON's next estimate by -41%."""
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    await append(server, sid, "user", text("look at the data"))
    call = {"type": "toolCall", "callId": "c1", "name": "read", "input": {"path": "data"}}
    first = await append(
        server, sid, "assistant", call, usage={"inputTokens": 3000, "outputTokens": 40}
    )
    result = {"type": "toolResult", "callId": "c1", "name": "read", "output": sample}
    estimated = (await append(server, sid, "tool", result))["tokens"]
    # The provider reports exactly what was estimated: context = last context + output + added.
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    call2 = {"type": "toolCall", "callId": "c2", "name": "read", "input": {"path": "again"}}
    await append(
        server,
        sid,
        "assistant",
        call2,
        usage={"inputTokens": snap["usedTokens"], "outputTokens": 40},
    )
    assert first["tokens"] > 0
    after = await server.request("budget/snapshot", {"sessionId": sid})
    assert after["lastCall"]["errorPct"] == 0.0
    again = (await append(server, sid, "tool", {**result, "callId": "c2"}))["tokens"]
    assert abs(again - estimated) / estimated <= 0.05, (estimated, again)


async def test_a_prune_keeps_system_and_tools_in_the_gauge(server):
    """Found: after a prune the gauge dropped the system prompt and tools (154,819 -> 54,269
    where 75,600 were freed). Now it moves by exactly what the prune reports."""
    created = await server.request("session/create", {"model": "gpt-4o", "contextWindow": 400_000})
    sid = created["sessionId"]
    system = "You are a careful engineer. Follow the house style. " * 600
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command.",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
            },
        }
    ]
    outputs = []
    for i in range(8):
        await append(server, sid, "user", text(f"step {i}: build it"))
        call = {
            "type": "toolCall",
            "callId": f"c{i}",
            "name": "bash",
            "input": {"cmd": f"make {i}"},
        }
        await append(server, sid, "assistant", call)
        output = f"compiling unit {i}: warning about deprecated flags in module {i}\n" * 800
        outputs.append(output)
        result = {"type": "toolResult", "callId": f"c{i}", "name": "bash", "output": output}
        await append(server, sid, "tool", result)
    assembled = await server.request(
        "context/assemble", {"sessionId": sid, "system": system, "tools": tools}
    )
    await append(
        server,
        sid,
        "assistant",
        text("built"),
        usage={"inputTokens": assembled["totalTokens"], "outputTokens": 3},
    )
    before = await server.request("budget/snapshot", {"sessionId": sid})
    compacted = await server.request("session/compact", {"sessionId": sid, "strategy": "prune"})
    action = compacted["actions"][0]
    assert action["kind"] == "prune"
    cleared = outputs[: action["parts"]]  # the oldest results go first
    placeholder = tokens("[Old tool result content cleared]")
    freed = sum(tokens(o) for o in cleared) - placeholder * len(cleared)
    after = compacted["snapshot"]
    assert action["tokensFreed"] == freed
    assert before["usedTokens"] - after["usedTokens"] == freed
    assert after["estimated"] is False  # still anchored on the provider's figure
    categories = {b["category"]: b["tokens"] for b in after["breakdown"]}
    assert categories["system"] == tokens(system) + 3 and categories["tools"] > 0


async def test_reasoning_the_format_never_sends_costs_nothing(server):
    """Found: OpenAI reasoning counted in totalTokens and the gauge (22,001 of 22,022 tokens),
    giving a false ContextOverflow. The oracle: tiktoken's count of the rendered request plus
    the documented framing (3 per message, 3 for the reply priming)."""
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    await append(server, sid, "user", text("What is the capital of France? Explain briefly."))
    await append(
        server,
        sid,
        "assistant",
        {"type": "reasoning", "text": "let me think about European capitals " * 3000},
        text("Paris."),
    )
    await append(server, sid, "user", text("And of Spain?"))
    estimated = await server.request("budget/snapshot", {"sessionId": sid})
    assembled = await server.request(
        "context/assemble", {"sessionId": sid, "system": "You are terse."}
    )
    rendered = assembled["messages"]
    assert all("think" not in json.dumps(m) for m in rendered)
    oracle = sum(tokens(m["content"]) + 3 for m in rendered) + 3
    assert assembled["totalTokens"] == oracle
    assert estimated["usedTokens"] == oracle - tokens("You are terse.") - 3
    after = await server.request("budget/snapshot", {"sessionId": sid})
    assert after["usedTokens"] == oracle
    assert after["version"] == estimated["version"]  # an assembly is a read


async def test_unsigned_thinking_is_not_counted_for_claude_but_signed_is(server):
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    await append(server, sid, "user", text("hi"))
    thought = "reasoning about the request in detail " * 200
    unsigned = await append(
        server, sid, "assistant", {"type": "reasoning", "text": thought}, text("ok")
    )
    signed = await append(
        server,
        sid,
        "assistant",
        {"type": "reasoning", "text": thought, "providerMetadata": {"signature": "sig"}},
        text("ok"),
    )
    assert signed["tokens"] - unsigned["tokens"] > 1000


async def test_a_tool_result_carrier_with_a_reminder_is_not_a_user_turn(server):
    """Found: a tool-result message carrying a reminder counted as a user turn, so a prune could
    clear results of the turn in progress."""
    created = await server.request("session/create", {"model": "gpt-4o", "contextWindow": 400_000})
    sid = created["sessionId"]
    await append(server, sid, "user", text("first task"))
    await append(server, sid, "user", text("second task"))
    for i in range(6):
        call = {"type": "toolCall", "callId": f"c{i}", "name": "bash", "input": {"i": i}}
        await append(server, sid, "assistant", call)
        output = f"line {i} of a long build log with many warnings\n" * 1500
        result = {"type": "toolResult", "callId": f"c{i}", "name": "bash", "output": output}
        await append(
            server, sid, "user", result, text("<system-reminder>keep going</system-reminder>")
        )
    compacted = await server.request("session/compact", {"sessionId": sid, "strategy": "prune"})
    # Every result belongs to the turn in progress (after the last user turn): none is cleared.
    assert [a["kind"] for a in compacted["actions"]] == ["skip"]


@pytest.mark.parametrize(
    ("usage", "named"),
    [
        (
            {"inputTokens": "5", "outputTokens": 1},
            "message.usage.inputTokens must be an integer, not a string",
        ),
        ({"inputTokens": 5.5, "outputTokens": 1}, "not a number with a fraction"),
        ({"inputTokens": True, "outputTokens": 1}, "not a boolean"),
        ({"inputTokens": 10**12, "outputTokens": 1}, "from 0 to 2,147,483,647"),
        ({"inputTokens": 2_000_000_000, "outputTokens": 1}, "more than 2x the gpt-4o window"),
    ],
)
async def test_token_counts_are_taken_as_sent_or_refused(server, usage, named):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    with pytest.raises(RpcError) as refused:
        await append(server, sid, "assistant", text("hi"), usage=usage)
    assert refused.value.code == -32602 and named in refused.value.message
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["version"] == 0 and snap["cost"]["totalUsd"] == 0  # nothing half-written


async def test_bad_messages_and_windows_are_refused_with_what_to_do(server):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    cases = [
        (
            {"role": "user", "parts": [text("x")], "usage": {"inputTokens": 5, "outputTokens": 1}},
            "usage on a user message",
        ),
        ({"role": "user", "parts": []}, "message.parts is empty"),
        (
            {
                "role": "tool",
                "parts": [{"type": "toolResult", "callId": "nope", "name": "bash", "output": "x"}],
            },
            "no toolCall of this session made",
        ),
    ]
    for message, named in cases:
        with pytest.raises(RpcError) as refused:
            await server.request("session/append", {"sessionId": sid, "message": message})
        assert refused.value.code == -32602 and named in refused.value.message, (
            refused.value.message
        )
    for window, named in ((8000, "leaves no room for input"), (1.5, "must be an integer")):
        with pytest.raises(RpcError) as refused:
            await server.request("session/create", {"model": "gpt-4o", "contextWindow": window})
        assert refused.value.code == -32602 and named in refused.value.message
    with pytest.raises(RpcError) as refused:
        await server.request("context/assemble", {"sessionId": sid, "system": 5, "format": "xml"})
    message = refused.value.message
    assert "system must be a string" in message and 'format must be one of "openai"' in message
    assert "typing" not in message and "Literal" not in message


async def test_an_unknown_model_name_on_a_reply_keeps_the_turn(server):
    """Found: `claude-opus-4-6[1m]` on an assistant message rejected the whole turn."""
    sid = (await server.request("session/create", {"model": "claude-opus-4-6"}))["sessionId"]
    await append(server, sid, "user", text("hi"))
    reply = {
        "role": "assistant",
        "parts": [text("hello")],
        "model": "claude-opus-4-6[1m]",
        "usage": {"inputTokens": 1000, "outputTokens": 10},
    }
    await server.request("session/append", {"sessionId": sid, "message": reply})
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["totals"]["calls"] == 1 and snap["cost"]["totalUsd"] > 0


async def test_session_list_answers_from_persisted_gauges(tmp_path):
    """session/list does not load sessions: a fresh process lists the figures every session
    was left with."""
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    first = await InProcessClient.start(cwd=tmp_path, env=env)
    await first.initialize()
    expected = {}
    for i in range(3):
        sid = (
            await first.request("session/create", {"model": "gpt-4o", "workspaceUri": "file:///ws"})
        )["sessionId"]
        await append(first, sid, "user", text("hello " * (i + 1)))
        expected[sid] = (await first.request("budget/snapshot", {"sessionId": sid}))["usedTokens"]
    assert await first.shutdown() == 0
    second = await InProcessClient.start(cwd=tmp_path, env=env)
    await second.initialize()
    listed = await second.request("session/list", {"workspaceUri": "file:///ws"})
    assert {s["sessionId"]: s["usedTokens"] for s in listed["sessions"]} == expected
    status = await second.request("daemon/status")
    assert status["sessions"] == []  # nothing was loaded to answer
    assert await second.shutdown() == 0
