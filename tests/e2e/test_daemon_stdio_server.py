"""The standalone server on a real SQLite file: the first test through the real `tokend lsp
--standalone` process over real pipes, the others through the same server in this process
(tests/in_process.py)."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import ProcessClient, RpcError


async def test_append_usage_and_snapshot_agree(process_server: ProcessClient):
    server = process_server
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
    assert unknown_model.value.code == -33002
    assert ".tokend.toml" in unknown_model.value.message

    with pytest.raises(RpcError) as missing:
        await server.request("budget/snapshot", {"sessionId": "01JD0000000000000000000000"})
    assert missing.value.code == -33001

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
    assert neg.value.code == -32602 and "must be an integer from 0" in neg.value.message

    with pytest.raises(RpcError) as missing_field:
        await server.request("session/append", {"sessionId": sid, "message": {"role": "user"}})
    assert missing_field.value.code == -32602

    # nothing half-written: the session is still empty and the server still answers
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["version"] == 0 and snap["usedTokens"] == 0


async def _tool_turns(server: ProcessClient, sid: str, turns: int, log_lines: int) -> None:
    """`turns` x (user asks, assistant calls bash, bash returns a build log of `log_lines` lines)."""
    for i in range(turns):
        await server.request(
            "session/append", {"sessionId": sid, "message": _text("user", f"task {i}")}
        )
        call = {
            "type": "toolCall",
            "callId": f"c{i}",
            "name": "bash",
            "input": {"cmd": f"cat log{i}"},
        }
        calling = {"role": "assistant", "parts": [call]}
        await server.request("session/append", {"sessionId": sid, "message": calling})
        output = f"line {i} of a long build log with warnings\n" * log_lines  # ~10 tokens a line
        result = {"type": "toolResult", "callId": f"c{i}", "name": "bash", "output": output}
        await server.request(
            "session/append", {"sessionId": sid, "message": {"role": "tool", "parts": [result]}}
        )


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "text": text}]}


async def test_assemble_orders_chunks_and_marks_cache_breakpoints(server: ProcessClient):
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    await server.request(
        "session/append", {"sessionId": sid, "message": _text("user", "first question")}
    )
    await server.request(
        "session/append", {"sessionId": sid, "message": _text("assistant", "first answer")}
    )
    await server.request(
        "session/append", {"sessionId": sid, "message": _text("user", "second question")}
    )
    tool = {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    result = await server.request(
        "context/assemble",
        {
            "sessionId": sid,
            "format": "anthropic",
            "system": "You are careful.",
            "tools": [tool],
            "chatFiles": [{"path": "a.py", "text": "print('hi')\n"}],
            "reminder": "Answer briefly.",
        },
    )
    names = [c["name"] for c in result["chunks"]]
    assert names == [
        "tools", "system", "examples", "readOnlyFiles", "repoMap",
        "history", "chatFiles", "current", "reminder",
    ]  # fmt: skip
    assert sum(c["tokens"] for c in result["chunks"]) == result["totalTokens"]
    assert result["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert result["messages"][0]["role"] == "user"
    assert "first question" in str(result["messages"][0]) and "second question" in str(
        result["messages"][-1]
    )
    assert {b["chunk"] for b in result["cacheBreakpoints"]} >= {"tools", "system", "history"}
    # the measured system and tools now show in the gauge's breakdown, still adding up
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    categories = {b["category"]: b["tokens"] for b in snap["breakdown"]}
    assert categories["tools"] > 346 and categories["system"] > 0
    assert sum(categories.values()) == snap["usedTokens"]


async def test_overflow_says_what_to_drop(server: ProcessClient):
    sid = (await server.request("session/create", {"model": "gpt-4o", "contextWindow": 20_000}))[
        "sessionId"
    ]
    # the input limit is 20,000 - 16,384 (gpt-4o's output reserve) = 3,616 tokens; the
    # history stays under it (no automatic compaction), a chat file pushes the request over
    for i in range(2):
        await server.request(
            "session/append", {"sessionId": sid, "message": _text("user", f"word{i} " * 1000)}
        )
    chat_file = {"path": "notes.txt", "text": "note " * 1500}
    with pytest.raises(RpcError) as overflow:
        await server.request(
            "context/assemble", {"sessionId": sid, "format": "openai", "chatFiles": [chat_file]}
        )
    assert overflow.value.code == -33003
    assert overflow.value.data["limit"] == 3616
    assert overflow.value.data["total"] > 3616
    suggestions = overflow.value.data["suggestions"]
    assert suggestions[0].startswith("drop chat file notes.txt")
    assert any("compact the session" in s for s in suggestions)

    with pytest.raises(RpcError) as too_large:
        await server.request(
            "session/append", {"sessionId": sid, "message": _text("user", "x " * 5000)}
        )
    assert too_large.value.code == -33005


async def test_prune_clears_old_tool_output_but_keeps_recent_turns(server: ProcessClient):
    sid = (await server.request("session/create", {"model": "gpt-4o", "contextWindow": 1_000_000}))[
        "sessionId"
    ]
    await _tool_turns(server, sid, turns=12, log_lines=900)
    compacted = await server.request(
        "session/compact", {"sessionId": sid, "strategy": "prune", "workDoneToken": "compact-1"}
    )
    begin = await server.next_notification("$/progress")
    end = await server.next_notification("$/progress")
    assert begin["token"] == end["token"] == "compact-1"
    assert (begin["value"]["kind"], end["value"]["kind"]) == ("begin", "end")
    prune = compacted["actions"][0]
    assert prune["kind"] == "prune" and prune["tokensFreed"] >= 20_000
    assert compacted["after"] < compacted["before"] - 20_000
    assert compacted["snapshot"]["estimated"] is True and compacted["snapshot"]["compactions"] == 1
    assembled = await server.request("context/assemble", {"sessionId": sid, "format": "openai"})
    tool_messages = [m for m in assembled["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "[Old tool result content cleared]"
    assert tool_messages[-1]["content"].startswith("line 11")  # the newest output stays whole
    assert assembled["totalTokens"] == compacted["after"]


async def test_a_new_connection_asking_for_active_follows_the_workspaces_newest_session(tmp_path):
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{tmp_path}/shared.sqlite3")
    workspace = tmp_path.as_uri()
    first = await InProcessClient.start(cwd=tmp_path, env=env)
    await first.initialize()
    sid = (await first.request("session/create", {"model": "gpt-4o", "workspaceUri": workspace}))[
        "sessionId"
    ]
    await first.request(
        "session/append", {"sessionId": sid, "message": _text("user", "remember me")}
    )
    assert await first.shutdown() == 0

    second = await InProcessClient.start(cwd=tmp_path, env=env)
    result = await second.request(
        "initialize",
        {
            "processId": None,
            "rootUri": workspace,
            "capabilities": {},
            "initializationOptions": {"session": "active"},  # as the editor clients ask
        },
    )
    assert result["serverInfo"]["name"] == "tokend"
    second.notify("initialized", {})
    change = await second.next_notification("budget/didChange")
    assert change["sessionId"] == sid and change["snapshot"]["version"] == 1
    await second.request("session/detach", {"sessionId": sid})
    attached = await second.request("session/attach", {"sessionId": sid})
    assert attached["usedTokens"] == change["snapshot"]["usedTokens"]
    assert await second.shutdown() == 0


async def test_passing_the_threshold_prunes_automatically_and_says_so(server: ProcessClient):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    await _tool_turns(server, sid, turns=12, log_lines=700)
    # the provider reports a context over gpt-4o's threshold (128,000 - 16,384 = 111,616)
    usage = {"inputTokens": 112_000, "outputTokens": 50}
    reply = {
        "role": "assistant",
        "parts": [{"type": "text", "text": "all logs read"}],
        "usage": usage,
    }
    await server.request("session/append", {"sessionId": sid, "message": reply})
    announced = await server.next_notification("session/didCompact")
    assert announced["automatic"] is True and announced["actions"][0]["kind"] == "prune"
    assert announced["after"] < announced["before"]
    snap = await server.request("budget/snapshot", {"sessionId": sid})
    assert snap["usedTokens"] < snap["autocompactThreshold"] and snap["compactions"] == 1
