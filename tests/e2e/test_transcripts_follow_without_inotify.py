"""Following transcripts when inotify cannot start: the real `tokend serve` runs in a user
namespace whose fs.inotify.max_user_instances is 0 (`unshare -Ur`: no privilege needed, nothing
changed outside), so watchdog's inotify observer fails as it does on a machine whose editors
and tools took every inotify instance. The daemon polls instead, as it does for a workspace.

Oracles: `tokend import` of the finished transcript into another store (the figures the
followed session must reach), and the daemon's log (it says it polls, and why).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.e2e.test_transcripts_follow import (  # the same helpers as the inotify-backed tests
    WAIT_SECONDS,
    _append,
    _figures,
    _lines,
    _oracle,
    _until,
)
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        yield runtime


NO_INOTIFY = 'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" -m tokend serve'


def serve_without_inotify(daemons: Daemons) -> None:
    """`tokend serve` where no inotify instance can be made; returns once it is ready."""
    if shutil.which("unshare") is None:
        pytest.fail("this test needs util-linux's `unshare` (user namespaces) to refuse inotify")
    stderr_file = daemons.base / "serve-no-inotify.err"
    with open(stderr_file, "wb") as stderr:
        proc = subprocess.Popen(
            ["unshare", "-Ur", "sh", "-c", NO_INOTIFY, sys.executable],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    daemons.processes.append(proc)
    deadline = time.monotonic() + 20
    while "tokend: ready" not in stderr_file.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, stderr_file.read_text()
        time.sleep(0.05)


def test_a_sessions_folder_is_followed_by_polling_when_inotify_cannot_start(
    daemons: Daemons, tmp_path: Path
):
    project = daemons.base / "claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    serve_without_inotify(daemons)
    client = LspClient.initialized(socket_path(), "editor")
    follower = client.result("follow/start", {"agent": "claude-code"})
    assert follower["folder"] and follower["transcripts"] == []

    transcript = project / "5b1e.jsonl"  # Claude Code starts a session: no inotify event
    for line in _lines("short.jsonl"):
        _append(transcript, [line])
    expected = _oracle(tmp_path, "short.jsonl")
    final = _until(client, lambda s: _figures(s) == expected)
    listed = client.result("follow/list")["followers"][0]["transcripts"]
    assert [(t["path"], t["sessionId"]) for t in listed] == [(str(transcript), final["sessionId"])]
    log = daemons.log_text()
    assert "polling every 1 s" in log and "fs.inotify.max_user_instances" in log, log[-2000:]


def test_one_transcript_is_followed_when_inotify_cannot_start(daemons: Daemons, tmp_path: Path):
    serve_without_inotify(daemons)
    lines = _lines("tool_heavy.jsonl")
    path = tmp_path / "transcript.jsonl"
    _append(path, lines[:2])
    editor = LspClient.initialized(socket_path(), "editor")
    reply = editor.request(
        "follow/start", {"agent": "claude-code", "path": str(path)}, timeout=WAIT_SECONDS
    )
    assert "result" in reply, reply
    expected = _oracle(tmp_path, "tool_heavy.jsonl")
    for line in lines[2:]:
        _append(path, [line])
    final = _until(editor, lambda s: _figures(s) == expected)
    assert final["sessionId"]
