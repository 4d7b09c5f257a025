"""The warm status line: one `statusline/line` request to a real daemon, a command that imports
nothing heavy, and a line that is always the daemon's current figure.

Oracles: the transcript read with json (the provider's usage of its last call), the daemon's
own budget/snapshot over another connection, and what `python -X importtime` says was imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
LAST_CALL = 37  # tool_heavy.jsonl's records up to its last provider call's, nothing after
HEAVY = ("json", "socket", "typing", "re", "enum", "selectors", "argparse", "datetime")


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        monkeypatch.setenv("NO_COLOR", "1")
        runtime.serve("--idle-timeout", "0")
        yield runtime


def _given(transcript: Path, session_id: str = "warm-1") -> dict[str, Any]:
    return {"session_id": session_id, "transcript_path": str(transcript), "cwd": "/"}


def _run(given: dict[str, Any], *python: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python, "-m", "tokend", "statusline"],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )


def _current(given: dict[str, Any]) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while "compacts at" not in (line := _run(given).stdout.strip()):
        assert time.monotonic() < deadline, line
        time.sleep(0.2)
    return line


def _last_call_tokens(lines: list[str]) -> int:
    """The context of the transcript's last provider call (input, cache read and written,
    output), from its last record, read with json."""
    usage = None
    for line in lines:
        record = json.loads(line)
        if record.get("type") == "assistant":
            usage = record["message"]["usage"]
    assert usage is not None
    return sum(
        usage[k]
        for k in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        )
    )


def _steady(client: LspClient, session_id: str, line: Any) -> tuple[str, dict[str, Any]]:
    """`line()` and the daemon's snapshot, taken when no change came between the snapshots
    read before and after it (the follower appends a transcript's messages one by one)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        before = client.result("budget/snapshot", {"sessionId": session_id})
        text = line()
        after = client.result("budget/snapshot", {"sessionId": session_id})
        if before["version"] == after["version"]:
            return text, after
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _call_tokens(last: dict[str, Any] | None) -> int | None:
    if last is None:
        return None
    keys = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens")
    return sum(last[k] for k in keys)


def test_a_warm_refresh_imports_nothing_heavy(daemons: Daemons, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(session_file("tool_heavy.jsonl").read_bytes())
    line = _current(_given(transcript))
    done = _run(_given(transcript), "-X", "importtime")
    assert done.returncode == 0 and done.stdout.strip() == line
    imported = {row.rsplit("|", 1)[-1].strip() for row in done.stderr.splitlines() if "|" in row}
    assert "tokend.commands.statusline" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_statusline_line_follows_and_renders_in_one_request(
    daemons: Daemons, tmp_path: Path
) -> None:
    lines = session_file("tool_heavy.jsonl").read_text().splitlines()[:LAST_CALL]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    client = LspClient.initialized(socket_path(), "test")
    try:
        given = {**_given(transcript), "rate_limits": {"five_hour": {"used_percentage": 42}}}
        tokens = _last_call_tokens(lines)
        deadline = time.monotonic() + WAIT_SECONDS
        while True:  # until the daemon has imported the last call (its gauge: that call's)
            reply = client.result("statusline/line", {"given": given})
            if reply["state"] == "current":
                snapshot = client.result("budget/snapshot", {"sessionId": reply["sessionId"]})
                if _call_tokens(snapshot["lastCall"]) == tokens:
                    break
            else:
                assert reply["state"] == "reading" and reply["line"] is None, reply
            assert time.monotonic() < deadline
            time.sleep(0.1)
        text, snapshot = _steady(
            client,
            reply["sessionId"],
            lambda: client.result("statusline/line", {"given": given})["line"],
        )
        used = snapshot["usedTokens"]  # the provider's last call, and what was added since
        parts = text.split(" · ")
        assert parts[:3] == [
            "claude-opus-4-6",
            f"{round(used / 1000)}k/200k",
            f"{round(100 * used / 200_000)}%",
        ]
        assert "5h 42%" in parts and "cache cold" in parts
        picked = client.result(
            "statusline/line", {"given": given, "segments": ["cost", "model"], "colour": True}
        )
        assert picked["line"] == f"${snapshot['cost']['totalUsd']:.2f} · claude-opus-4-6"
        for params, says in (
            ({}, "given"),
            ({"given": "x"}, "given"),
            ({"given": {"cwd": "/"}}, "transcript_path"),
            ({"given": {"transcript_path": "t.jsonl"}}, "absolute"),
            ({"given": given, "segments": ["speed"]}, "unknown segment speed"),
        ):
            error = client.request("statusline/line", params)["error"]
            assert error["code"] == -32602 and says in error["message"], (params, error)
    finally:
        client.close()


def test_the_line_is_the_daemons_current_figure_as_the_transcript_grows(
    daemons: Daemons, tmp_path: Path
) -> None:
    lines = session_file("tool_heavy.jsonl").read_text().splitlines()[:LAST_CALL]
    first = 13  # up to the second provider call's record
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines[:first]) + "\n")
    given = _given(transcript, "grow-1")
    before = _current(given)
    with transcript.open("a") as out:
        out.write("\n".join(lines[first:]) + "\n")
    final = _last_call_tokens(lines)
    client = LspClient.initialized(socket_path(), "test")
    try:
        session = client.result("follow/start", {"agent": "claude-code", "path": str(transcript)})
        session_id = session["transcripts"][0]["sessionId"]
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            snapshot = client.result("budget/snapshot", {"sessionId": session_id})
            if _call_tokens(snapshot["lastCall"]) == final:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # the refresh after the daemon moved: its new figure
        after, snapshot = _steady(client, session_id, lambda: _run(given).stdout.strip())
    finally:
        client.close()
    used = snapshot["usedTokens"]
    assert after != before and after.split(" · ")[1] == f"{round(used / 1000)}k/200k"
    remembered = Path(os.environ["XDG_RUNTIME_DIR"]) / "tokend" / "statusline" / "grow-1"
    assert remembered.read_text() == after


def test_a_daemon_without_statusline_line_is_asked_the_older_way(
    daemons: Daemons, tmp_path: Path
) -> None:
    """What the command does when the daemon answers MethodNotFound (one started before an
    upgrade): follow/start and budget/snapshot, rendered by the command; the same line."""
    from tokend.commands.statusline_known import line_by_snapshot

    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(session_file("tool_heavy.jsonl").read_bytes())
    given = _given(transcript, "old-1")
    line = _current(given)
    assert line_by_snapshot(given, None) == line  # rendered, or the line kept for all segments
    deadline = time.monotonic() + WAIT_SECONDS  # a loaded machine: follow/start past its 0.1 s
    while (picked := line_by_snapshot(given, ("cost", "model"))) == "tokend: starting":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    cost = next(part for part in line.split(" · ") if part.startswith("$"))
    assert picked == f"{cost} · claude-opus-4-6"


def test_segments_from_the_config_files_cost_the_command_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`[statusline] segments` in the user's config.toml, a project's .tokend.toml over it,
    `--segments` over both; the daemon reads them (the command still imports nothing heavy)."""
    with real_daemons(monkeypatch) as runtime:
        user = runtime.base / "config"
        (user / "tokend").mkdir(parents=True)
        (user / "tokend" / "config.toml").write_text('[statusline]\nsegments = ["cost", "model"]\n')
        monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        monkeypatch.setenv("NO_COLOR", "1")
        runtime.serve("--idle-timeout", "0")
        transcript = tmp_path / "t.jsonl"
        transcript.write_bytes(session_file("tool_heavy.jsonl").read_bytes())
        given = _given(transcript, "conf-1")
        deadline = time.monotonic() + WAIT_SECONDS
        while not (line := _run(given).stdout.strip()).endswith("· claude-opus-4-6"):
            assert time.monotonic() < deadline, line
            time.sleep(0.2)
        assert line.startswith("$") and len(line.split(" · ")) == 2
        done = _run(given, "-X", "importtime")
        imported = {r.rsplit("|", 1)[-1].strip() for r in done.stderr.splitlines() if "|" in r}
        assert done.stdout.strip() == line and not imported & set(HEAVY)

        project = tmp_path / "project"
        project.mkdir()
        (project / ".tokend.toml").write_text('[statusline]\nsegments = ["model"]\n')
        inside = {**given, "workspace": {"project_dir": str(project)}}
        assert _run(inside).stdout.strip() == "claude-opus-4-6"
        picked = subprocess.run(
            [sys.executable, "-m", "tokend", "statusline", "--segments", "compactions,model"],
            input=json.dumps(inside),
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS,
        )
        assert picked.stdout.strip() == "claude-opus-4-6"  # no compactions: not shown

        (project / ".tokend.toml").write_text('[statusline]\nsegments = ["speed"]\n')
        os.utime(project / ".tokend.toml", (time.time() + 5, time.time() + 5))
        deadline = time.monotonic() + WAIT_SECONDS  # a rejected value: the user's in effect
        while (line := _run(inside).stdout.strip()) == "claude-opus-4-6":
            assert time.monotonic() < deadline, line
            time.sleep(0.3)
        assert line.endswith("· claude-opus-4-6") and line.startswith("$")
