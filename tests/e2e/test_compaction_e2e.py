"""End to end, the real `tokend lsp --standalone` over pipes and a real SQLite file: a chat-only
session past the threshold compacts, tool outputs are gated and read back, rewinds and forks."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError


@pytest.fixture
def db(tmp_path):
    return tmp_path / "tokend.sqlite3"


@pytest.fixture
async def server(tmp_path, db):
    client = await InProcessClient.start(
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


def text(value: str) -> dict:
    return {"type": "text", "text": value}


async def append(server, sid, role, *parts, **extra) -> dict:
    message = {"role": role, "parts": list(parts), **extra}
    return await server.request("session/append", {"sessionId": sid, "message": message})


async def test_a_chat_only_session_past_the_threshold_is_compacted_before_it_is_sent(server):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    typed = []
    for i in range(46):
        said = f"request {i}: rename helper {i} " + "and keep it tidy " * 300
        typed.append(said)
        await append(server, sid, "user", text(said))
        await append(server, sid, "assistant", text(f"done {i} " + "explained " * 1200))
    snapshot = await server.request("budget/snapshot", {"sessionId": sid})
    assert snapshot["compactions"] == 0
    last = await append(server, sid, "user", text("and now the docs " * 400))
    compacted = await server.next_notification("session/didCompact")
    assert compacted["automatic"] is True
    assert [a["kind"] for a in compacted["actions"]] == ["skip", "summarize"]
    summary_id = compacted["actions"][1]["messageId"]
    assert compacted["after"] < snapshot["autocompactThreshold"] <= compacted["before"]
    # The request goes out: no ContextOverflow, the summary first and not as the user.
    assembled = await server.request("context/assemble", {"sessionId": sid, "format": "openai"})
    assert assembled["messages"][0]["role"] == "system"
    assert "not a message from the user" in assembled["messages"][0]["content"]
    assert assembled["messages"][-1] == {"role": "user", "content": "and now the docs " * 400}
    # Nothing lost: every message is listed, the summarized ones marked as such.
    live = await server.request("session/messages", {"sessionId": sid})
    assert live["messages"][0]["kind"] == "summary"
    assert live["messages"][0]["messageId"] == summary_id
    assert live["messages"][-1]["messageId"] == last["messageId"]
    every = await server.request("session/messages", {"sessionId": sid, "includeCompacted": True})
    assert len(every["messages"]) == 46 * 2 + 1 + 1
    gone = [m for m in every["messages"] if not m["live"]]
    assert gone and all(m["compactedBy"] == summary_id for m in gone)
    written = [m["parts"][0]["text"] for m in every["messages"] if m["role"] == "user"]
    assert written[:46] == typed


async def test_a_huge_tool_result_is_gated_and_read_back_whole(server, db):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    await append(server, sid, "user", text("run the suite"))
    call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": "make"}}
    await append(server, sid, "assistant", call)
    output = "".join(f"line {i}: ünïcödé output of the build\n" for i in range(6_000))
    assert len(output) > 200_000
    result = {"type": "toolResult", "callId": "c1", "name": "Bash", "output": output}
    appended = await append(server, sid, "tool", result)
    (gated,) = appended["gated"]
    assert gated["gate"] == "preview" and gated["originalChars"] == len(output)
    assert gated["shownChars"] < 2_500
    snapshot = await server.request("budget/snapshot", {"sessionId": sid})
    assert any(f"({len(output):,} characters)" in w for w in snapshot["warnings"])
    first = await server.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    second = await server.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    assert json.dumps(first["messages"]) == json.dumps(second["messages"])  # frozen decision
    (shown,) = [
        block["content"]
        for m in first["messages"]
        for block in m["content"]
        if block["type"] == "tool_result"
    ]
    assert shown.startswith(output[:2_000]) and output[2_000:2_100] not in shown
    assert gated["ref"] in shown and len(shown) == gated["shownChars"]
    pieces, offset = [], 0
    while True:
        got = await server.request(
            "toolOutput/read",
            {"sessionId": sid, "ref": gated["ref"], "offset": offset, "length": 70_000},
        )
        pieces.append(got["text"])
        offset += len(got["text"])
        if got["eof"]:
            break
    assert "".join(pieces) == output and got["totalChars"] == len(output)
    with sqlite3.connect(db) as connection:  # kept once, whole, beside the message
        (stored,) = connection.execute("SELECT text FROM tool_outputs").fetchall()
    assert stored[0] == output
    with pytest.raises(RpcError) as unknown:
        await server.request("toolOutput/read", {"sessionId": sid, "ref": "sha256:00"})
    assert unknown.value.code == -32602 and "names no tool output" in unknown.value.message


async def test_rewind_takes_later_turns_out_and_fork_copies_up_to_a_message(server, db):
    sid = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    ids = []
    for i in range(4):
        ids.append((await append(server, sid, "user", text(f"question {i}")))["messageId"])
        ids.append((await append(server, sid, "assistant", text(f"answer {i}")))["messageId"])
    before = await server.request("budget/snapshot", {"sessionId": sid})
    rewound = await server.request("session/rewind", {"sessionId": sid, "toMessageId": ids[3]})
    assert rewound["removed"] == 4 and rewound["version"] == before["version"] + 1
    live = await server.request("session/messages", {"sessionId": sid})
    assert [m["messageId"] for m in live["messages"]] == ids[:4]
    with sqlite3.connect(db) as connection:
        marked = connection.execute(
            "SELECT id FROM messages WHERE compacted_by = 'rewind' ORDER BY seq"
        ).fetchall()
    assert [m[0] for m in marked] == ids[4:]
    assert rewound["snapshot"]["usedTokens"] < before["usedTokens"]

    forked = await server.request("session/fork", {"sessionId": sid, "atMessageId": ids[1]})
    child = forked["sessionId"]
    assert forked["parentId"] == sid and forked["messages"] == 2
    copied = await server.request("session/messages", {"sessionId": child})
    assert [m["parts"][0]["text"] for m in copied["messages"]] == ["question 0", "answer 0"]
    await append(server, child, "user", text("a different question"))
    parent = await server.request("session/messages", {"sessionId": sid})
    assert len(parent["messages"]) == 4  # the parent is untouched

    with pytest.raises(RpcError) as bad:
        await server.request("session/rewind", {"sessionId": sid, "toMessageId": ids[6]})
    assert bad.value.code == -32602 and "not in the live context" in bad.value.message
    with pytest.raises(RpcError) as strategy:
        await server.request("session/compact", {"sessionId": sid, "strategy": "shrink"})
    assert strategy.value.code == -32602 and "strategy" in strategy.value.message
