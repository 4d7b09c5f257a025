"""The daemon follows Claude Code transcripts live: a real `tokend serve`, real clients on its
socket, and transcripts this test writes record by record from a real session.

The oracle is `tokend import` of the finished transcript into another store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.commands.importer import import_events
from tokend.daemon.paths import socket_path
from tokend.service.app import open_service

WAIT_SECONDS = 60.0  # generous: shared machines are slow; every wait ends on an outcome


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        yield runtime


def _lines(name: str) -> list[str]:
    return [line for line in session_file(name).read_text().splitlines() if line.strip()]


def _oracle(tmp_path: Path, name: str) -> dict[str, Any]:
    service = open_service(None, f"sqlite:///{tmp_path}/oracle.sqlite3")
    outcome = import_events(service, session_file(name))
    s = service.sessions.snapshot(outcome.session_id)
    service.close()
    t = s.totals
    totals = [t.calls, t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_write_tokens]
    return {"usedTokens": s.used_tokens, "totals": totals}


def _until(client: LspClient, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first budget/didChange snapshot (kept or new) for which `done` holds."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        while client.notifications:
            message = client.notifications.pop(0)
            if message.get("method") == "budget/didChange" and done(message["params"]["snapshot"]):
                return message["params"]["snapshot"]
        client.notifications.append(client.read_message(max(0.0, deadline - time.monotonic())))


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a") as stream:
        for line in lines:
            stream.write(line + "\n")
            stream.flush()


def _figures(s: dict[str, Any]) -> dict[str, Any]:
    """What following and importing agree on. Not the version: a reply followed while it is
    written grows by changes of its own, each a version, so the version counts how often the
    daemon happened to read the file (tests/service/test_transcripts_follow_tail.py)."""
    t = s["totals"]
    keys = ("calls", "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
    return {"usedTokens": s["usedTokens"], "totals": [t[k] for k in keys]}


def test_a_growing_transcript_moves_the_gauge_of_the_client_that_follows_it(daemons, tmp_path):
    daemons.serve()
    lines = _lines("tool_heavy.jsonl")
    path = tmp_path / "transcript.jsonl"
    _append(path, lines[:2])  # the prompt: no reply yet, so no session yet
    editor = LspClient.initialized(socket_path(), "editor")
    follower = editor.result("follow/start", {"agent": "claude-code", "path": str(path)})
    assert follower["agent"] == "claude-code" and not follower["folder"]
    assert [t["sessionId"] for t in follower["transcripts"]] == [None]

    expected = _oracle(tmp_path, "tool_heavy.jsonl")
    # Claude Code writes on, one record at a time. The second reply comes in two records (one a
    # block): the daemon shows its first block before the second is written, so the reply grows
    # after it was imported, as it does whenever the daemon reads a reply being written.
    first_block, second_block = (json.loads(lines[i])["message"]["id"] for i in (11, 12))
    assert first_block == second_block
    for line in lines[2:12]:
        _append(path, [line])
    _until(editor, lambda s: s["totals"]["calls"] == 2)
    for line in lines[12:]:
        _append(path, [line])
    final = _until(editor, lambda s: _figures(s) == expected)
    assert final["sessionId"]

    # another client sees the same session, the same figures
    other = LspClient.initialized(socket_path(), "other")
    assert _figures(other.result("budget/snapshot", {"sessionId": final["sessionId"]})) == expected
    listed = other.result("follow/list")["followers"]
    assert [(f["followerId"], f["transcripts"][0]["sessionId"]) for f in listed] == [
        (follower["followerId"], final["sessionId"])
    ]
    assert listed[0]["transcripts"][0]["messages"] == 17

    # following the same file again is the same follower: no record is imported twice
    again = other.result("follow/start", {"agent": "claude-code", "path": str(path)})
    assert again["followerId"] == follower["followerId"]
    assert other.result("follow/stop", {"followerId": follower["followerId"]})["path"] == str(path)
    assert other.result("follow/list") == {"followers": []}
    error = other.request("follow/stop", {"followerId": follower["followerId"]})["error"]
    assert error["code"] == -32602 and "follow/list" in error["message"]


def test_watching_the_sessions_folder_picks_up_a_new_claude_code_session(daemons, tmp_path):
    project = daemons.base / "claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    daemons.serve()
    client = LspClient.initialized(socket_path(), "editor")
    follower = client.result("follow/start", {"agent": "claude-code"})
    assert follower["folder"] and follower["transcripts"] == []

    transcript = project / "5b1e.jsonl"  # Claude Code starts a session
    lines = _lines("short.jsonl")
    for line in lines:
        _append(transcript, [line])
    expected = _oracle(tmp_path, "short.jsonl")
    final = _until(client, lambda s: _figures(s) == expected)
    listed = client.result("follow/list")["followers"][0]["transcripts"]
    assert [(t["path"], t["sessionId"]) for t in listed] == [(str(transcript), final["sessionId"])]
    # the session belongs to the folder Claude Code ran in
    cwd = json.loads(lines[1])["cwd"]
    sessions = client.result("session/list", {"workspaceUri": Path(cwd).as_uri()})["sessions"]
    assert final["sessionId"] in [s["sessionId"] for s in sessions]


def _tokend(*args: str, cwd: Path, stdin: str | None = None, **env: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "tokend", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        env={**os.environ, **env},
    )


def test_the_terminal_reads_the_daemon_follow_status_statusline(daemons: Daemons, tmp_path):
    daemons.serve()
    workspace = tmp_path / "app"
    workspace.mkdir()
    path = tmp_path / "transcript.jsonl"
    _append(path, _lines("short.jsonl"))
    expected = _oracle(tmp_path, "short.jsonl")

    followed = _tokend(
        "follow", "claude-code", str(path), "--workspace", str(workspace), "--detach", cwd=tmp_path
    )
    assert followed.returncode == 0, followed.stderr
    assert f"{expected['usedTokens']:,} / 200,000 tokens" in followed.stdout

    # `tokend status` answers from the daemon: a CLI pointed at an empty store still knows
    empty = f"sqlite:///{tmp_path}/empty.sqlite3"
    status = _tokend("status", "--json", cwd=workspace, TOKEND_DATABASE_URL=empty)
    assert status.returncode == 0, status.stderr
    snapshot = json.loads(status.stdout)
    assert _figures(snapshot) == expected

    shaped = _tokend("status", "--format", "claude-code", cwd=workspace)
    assert shaped.returncode == 0, shaped.stderr
    claude = json.loads(shaped.stdout)
    window = claude["context_window"]
    assert claude["session_id"] == snapshot["sessionId"]
    assert claude["transcript_path"] == str(path)  # the transcript the daemon follows
    assert claude["workspace"]["project_dir"] == str(workspace)
    assert window["context_window_size"] == 200_000
    assert window["used_percentage"] == round(100 * expected["usedTokens"] / 200_000, 1)
    assert window["used_percentage"] + window["remaining_percentage"] == pytest.approx(100)
    last = snapshot["lastCall"]
    assert window["current_usage"]["cache_read_input_tokens"] == last["cacheReadTokens"]
    assert claude["cost"]["total_cost_usd"] == snapshot["cost"]["totalUsd"]
    assert claude["exceeds_200k_tokens"] is False

    piped = json.dumps({"session_id": "5b1e", "transcript_path": str(path), "cwd": str(workspace)})
    line = _tokend("statusline", cwd=workspace, stdin=piped)
    assert line.returncode == 0
    assert line.stdout.startswith("claude-opus-4-6 · ")
    assert f"{round(100 * expected['usedTokens'] / 200_000)}%" in line.stdout
    nothing = _tokend("statusline", cwd=workspace, stdin="{}")
    assert nothing.returncode == 0 and nothing.stdout.startswith("tokend: ")


def test_tokend_watch_prints_the_gauge_at_every_change(daemons: Daemons, tmp_path):
    daemons.serve()
    workspace = tmp_path / "app"
    workspace.mkdir()
    agent = LspClient.initialized(socket_path(), "agent")
    sid = agent.result("session/create", {"model": "gpt-4o", "workspaceUri": workspace.as_uri()})[
        "sessionId"
    ]
    text = {"type": "text", "text": "make the build pass " * 50}
    message = {"role": "user", "parts": [text]}
    agent.result("session/append", {"sessionId": sid, "message": message})
    watch = subprocess.Popen(
        [sys.executable, "-m", "tokend", "watch"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    daemons.processes.append(watch)  # type: ignore[arg-type]
    try:
        assert watch.stdout is not None
        first = agent.result("budget/snapshot", {"sessionId": sid})
        assert f"{first['usedTokens']:,} / 128,000 tokens" in watch.stdout.readline()
        agent.result("session/append", {"sessionId": sid, "message": message})
        second = agent.result("budget/snapshot", {"sessionId": sid})
        assert second["usedTokens"] > first["usedTokens"]
        assert f"{second['usedTokens']:,} / 128,000 tokens" in watch.stdout.readline()
    finally:
        watch.kill()
