"""`tokend status --format claude-code` fills Claude Code's cost block (durations, lines) from a
real daemon: the session is written over the daemon's socket, the real CLI reads it back.
Oracles: the lines of the edits this test sends, counted by hand, and the times the daemon
stored for the messages (session/messages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
USAGE = {"inputTokens": 900, "outputTokens": 60, "cacheReadTokens": 12_000}


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        yield runtime


def _append(client: LspClient, sid: str, role: str, parts: list[dict], **extra: Any) -> None:
    client.result(
        "session/append",
        {"sessionId": sid, "message": {"role": role, "parts": parts, **extra}},
    )


def _edit(client: LspClient, sid: str, call_id: str, name: str, args: dict, ok: bool) -> None:
    call = {"type": "toolCall", "callId": call_id, "name": name, "input": args}
    _append(client, sid, "assistant", [call], usage=USAGE)
    output = "applied" if ok else "old_string not found"
    result = {
        "type": "toolResult",
        "callId": call_id,
        "name": name,
        "output": output,
        "isError": not ok,
    }
    _append(client, sid, "tool", [result])


def test_status_in_claude_code_shape_has_durations_and_lines(daemons: Daemons, tmp_path: Path):
    daemons.serve()
    workspace = tmp_path / "app"
    workspace.mkdir()
    client = LspClient.unix(socket_path())
    assert "result" in client.initialize("times-test")
    created = client.result(
        "session/create",
        {"model": "claude-sonnet-4-5", "workspaceUri": workspace.as_uri()},
    )
    sid = created["sessionId"]
    _append(client, sid, "user", [{"type": "text", "text": "rename the helper and add a test"}])
    # 4 old lines -> 6: the first line changed (+1 -1), two lines added after the rest: +3 -1
    old = "def helper():\n    return 1\n\n\n"
    new = "def renamed():\n    return 1\n\n\ndef other():\n    pass\n"
    _edit(
        client,
        sid,
        "e1",
        "Edit",
        {"file_path": "m.py", "old_string": old, "new_string": new},
        ok=True,
    )
    # a new file of 7 lines: +7
    test_file = "".join(f"line {i}\n" for i in range(7))
    _edit(client, sid, "e2", "Write", {"file_path": "t.py", "content": test_file}, ok=True)
    # refused by the tool: not counted
    _edit(
        client,
        sid,
        "e3",
        "Edit",
        {"file_path": "m.py", "old_string": "x", "new_string": "y\nz"},
        ok=False,
    )
    # a Codex patch: +2 -1
    patch = "*** Begin Patch\n*** Update File: m.py\n@@\n-    pass\n+    return 2\n+# done\n*** End Patch"
    _edit(client, sid, "e4", "apply_patch", {"input": patch}, ok=True)
    messages = client.result("session/messages", {"sessionId": sid})["messages"]
    client.close()

    shaped = subprocess.run(
        [sys.executable, "-m", "tokend", "status", "--format", "claude-code"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        env=dict(os.environ),
    )
    assert shaped.returncode == 0, shaped.stderr
    cost = json.loads(shaped.stdout)["cost"]

    times = [datetime.fromisoformat(m["createdAt"]) for m in messages]
    wall_ms = round((max(times) - min(times)).total_seconds() * 1000)
    assert len(messages) == 9
    assert cost["total_lines_added"] == 3 + 7 + 2
    assert cost["total_lines_removed"] == 1 + 1
    assert cost["total_duration_ms"] == wall_ms
    assert cost["total_api_duration_ms"] is None  # no client said how long a reply took
    assert cost["total_cost_usd"] > 0
