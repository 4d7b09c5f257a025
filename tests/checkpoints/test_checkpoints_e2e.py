"""End to end: the real `tokend lsp --standalone` process, a real folder, real watchdog events,
an editor attached over the same connection. Oracle: the bytes on disk."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError

WAIT_SECONDS = 30.0


async def until(what: str, check: Callable[[], Awaitable[bool]]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
async def server(tmp_path: Path):
    client = await InProcessClient.start(
        cwd=tmp_path,
        env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{tmp_path}/tokend.sqlite3"),
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


async def append(server: InProcessClient, sid: str, role: str, parts: list[Any]) -> str:
    result = await server.request(
        "session/append", {"sessionId": sid, "message": {"role": role, "parts": parts}}
    )
    return str(result["messageId"])


async def test_an_editor_save_is_the_users_and_a_rewind_keeps_it(server: InProcessClient, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_bytes(b"A = 1\n")
    (root / "b.py").write_bytes(b"B = 1\n")
    created = await server.request(
        "session/create", {"model": "gpt-4o", "workspaceUri": root.as_uri()}
    )
    sid = created["sessionId"]
    first = await append(server, sid, "user", [{"type": "text", "text": "bump both"}])

    async def watching() -> bool:
        listed = await server.request("checkpoint/list", {"sessionId": sid})
        return bool(listed["watching"])

    await until("the first walk", watching)

    async def agent_files(n: int) -> bool:
        listed = await server.request("checkpoint/list", {"sessionId": sid})
        return sum(len(t["files"]) for t in listed["turns"]) >= n

    call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": "sed -i"}}
    await append(server, sid, "assistant", [call])
    (root / "a.py").write_bytes(b"A = 2\n")
    (root / "b.py").unlink()
    await until("the agent's two changes", lambda: agent_files(2))
    result = {"type": "toolResult", "callId": "c1", "name": "Bash", "output": "ok"}
    await append(server, sid, "tool", [result])
    await append(server, sid, "assistant", [{"type": "text", "text": "bumped"}])

    # The user edits a.py in an attached editor and saves it.
    uri = (root / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "A = 2\n"}
    server.notify("textDocument/didOpen", {"textDocument": doc})
    mine = "A = 2  # reviewed\n"
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": mine}]},
    )
    (root / "a.py").write_text(mine)
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": mine})

    async def editor_logged() -> bool:
        listed = await server.request("checkpoint/list", {"sessionId": sid})
        return any(f["origin"] == "editor" for t in listed["turns"] for f in t["outside"])

    await until("the editor's save", editor_logged)
    listed = await server.request("checkpoint/list", {"sessionId": sid})
    (turn,) = listed["turns"]
    assert turn["messageId"] == first and turn["endedAt"] is not None
    assert [(f["path"], f["kind"]) for f in turn["files"]] == [
        ("a.py", "modified"),
        ("b.py", "deleted"),
    ]
    assert turn["outside"] == [
        {"path": "a.py", "kind": "modified", "added": 1, "removed": 1, "origin": "editor"}
    ]

    diff = await server.request(
        "checkpoint/diff", {"sessionId": sid, "messageId": first, "path": "b.py"}
    )
    assert diff == {"diff": "--- a/b.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-B = 1\n"}

    dry = await server.request(
        "checkpoint/restore", {"sessionId": sid, "toMessageId": first, "dryRun": True}
    )
    assert not (root / "b.py").exists()
    done = await server.request("checkpoint/restore", {"sessionId": sid, "toMessageId": first})
    assert (
        done["files"]
        == dry["files"]
        == [
            {
                "path": "a.py",
                "action": "kept",
                "reason": "changed since the agent's turn (an editor)",
            },
            {"path": "b.py", "action": "create"},
        ]
    )
    assert (done["restored"], done["kept"], done["dryRun"]) == (1, 1, False)
    assert (root / "a.py").read_bytes() == mine.encode()
    assert (root / "b.py").read_bytes() == b"B = 1\n"

    with pytest.raises(RpcError) as unknown:
        await server.request("checkpoint/restore", {"sessionId": sid, "toMessageId": "nope"})
    assert unknown.value.code == -32602


async def test_session_rewind_restores_the_code_and_the_conversation_together(
    server: InProcessClient, tmp_path
):
    """session/rewind {restore: "both"}: the files as they were, and the turn out of the live
    context; a dry run first changes nothing."""
    root = tmp_path / "both"
    root.mkdir()
    (root / "notes.md").write_bytes(b"first draft\n")
    created = await server.request(
        "session/create", {"model": "gpt-4o", "workspaceUri": root.as_uri()}
    )
    sid = created["sessionId"]
    first = await append(server, sid, "user", [{"type": "text", "text": "keep the draft"}])
    await append(server, sid, "assistant", [{"type": "text", "text": "kept"}])

    async def watching() -> bool:
        return bool((await server.request("checkpoint/list", {"sessionId": sid}))["watching"])

    await until("the first walk", watching)
    await append(server, sid, "user", [{"type": "text", "text": "rewrite it"}])
    call = {"type": "toolCall", "callId": "w1", "name": "Write", "input": {"path": "notes.md"}}
    await append(server, sid, "assistant", [call])
    (root / "notes.md").write_bytes(b"rewritten\n")
    (root / "extra.md").write_bytes(b"new file\n")

    async def two_changes() -> bool:
        listed = await server.request("checkpoint/list", {"sessionId": sid})
        return sum(len(t["files"]) for t in listed["turns"]) >= 2

    await until("the agent's changes", two_changes)
    result = {"type": "toolResult", "callId": "w1", "name": "Write", "output": "ok"}
    await append(server, sid, "tool", [result])
    await append(server, sid, "assistant", [{"type": "text", "text": "rewritten"}])
    before = await server.request("budget/snapshot", {"sessionId": sid})

    dry = await server.request(
        "session/rewind",
        {"sessionId": sid, "toMessageId": first, "restore": "both", "dryRun": True},
    )
    assert dry["removed"] == 5 and dry["version"] == before["version"]
    assert (root / "notes.md").read_bytes() == b"rewritten\n"  # nothing written by a dry run

    done = await server.request(
        "session/rewind", {"sessionId": sid, "toMessageId": first, "restore": "both"}
    )
    assert (root / "notes.md").read_bytes() == b"first draft\n"
    assert not (root / "extra.md").exists()
    assert {f["path"] for f in done["code"]["files"]} == {"notes.md", "extra.md"}
    assert done["removed"] == 5 and done["version"] == before["version"] + 1
    live = await server.request("session/messages", {"sessionId": sid})
    assert [m["messageId"] for m in live["messages"]][-1] == first
