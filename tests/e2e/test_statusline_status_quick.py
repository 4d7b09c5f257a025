"""`tokend status` warm: when a daemon answers, the command takes the status line's light path
(nothing heavy imported, requests written in batches) and prints what it always printed.

Oracles: the daemon's budget/snapshot and follow/list read over another connection by the
test's own client, the folder and transcript the test made, and `python -X importtime`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.commands.live import gauge_line
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
HEAVY = ("json", "socket", "typing", "re", "enum", "argparse", "pathlib", "urllib.parse")


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        runtime.serve("--idle-timeout", "0")
        yield runtime


def _status(
    cwd: Path, *args: str, python: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python, "-m", "tokend", "status", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )


def _followed(tmp_path: Path) -> tuple[Path, Path, str, dict[str, Any], dict[str, Any]]:
    """A project folder (with a space and a non-ASCII letter: its URI is escaped), a Claude Code
    transcript the daemon follows into a session of it; (folder, transcript, session id, the
    snapshot once the import settled, follow/list)."""
    project = tmp_path / "my projé"
    project.mkdir()
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    client = LspClient.initialized(socket_path(), "test")
    try:
        started = client.result(
            "follow/start",
            {"agent": "claude-code", "path": str(transcript), "workspaceUri": project.as_uri()},
        )
        session_id = started["transcripts"][0]["sessionId"]
        deadline = time.monotonic() + WAIT_SECONDS
        before = client.result("budget/snapshot", {"sessionId": session_id})
        while True:  # until two snapshots a moment apart agree (the import settled)
            time.sleep(0.3)
            after = client.result("budget/snapshot", {"sessionId": session_id})
            if after["version"] == before["version"]:
                break
            assert time.monotonic() < deadline
            before = after
        listed = client.result("follow/list", {})
    finally:
        client.close()
    return project, transcript, session_id, after, listed


def test_status_warm_prints_the_daemons_figures_in_every_format(
    daemons: Daemons, tmp_path: Path
) -> None:
    project, transcript, session_id, snapshot, _ = _followed(tmp_path)
    line = _status(project)
    assert line.returncode == 0, line.stderr
    assert line.stdout == gauge_line(snapshot) + "\n"
    assert snapshot["model"] in line.stdout and f"{snapshot['usedTokens']:,}" in line.stdout
    for args in (("--json",), ("--format", "json"), ("--format=json", "--session", session_id)):
        done = _status(project, *args)
        assert done.returncode == 0 and json.loads(done.stdout) == snapshot, args
        assert done.stdout == json.dumps(snapshot) + "\n"  # json.dumps' own spacing
    claude = _status(project, "--format", "claude-code")
    shape = json.loads(claude.stdout)
    assert shape["transcript_path"] == str(transcript.resolve())
    assert shape["workspace"] == {"current_dir": str(project), "project_dir": str(project)}
    assert shape["session_id"] == session_id
    assert shape["context_window"]["context_window_size"] == snapshot["contextWindow"]
    assert shape["cost"]["total_cost_usd"] == snapshot["cost"]["totalUsd"]


def test_status_warm_imports_nothing_heavy(daemons: Daemons, tmp_path: Path) -> None:
    project, *_ = _followed(tmp_path)
    for args in ((), ("--json",), ("--format", "claude-code")):
        done = _status(project, *args, python=("-X", "importtime"))
        assert done.returncode == 0, done.stderr
        imported = {r.rsplit("|", 1)[-1].strip() for r in done.stderr.splitlines() if "|" in r}
        assert not imported & set(HEAVY), (args, sorted(imported & set(HEAVY)))
        assert "tokend.commands.status_quick" in imported


def test_what_the_quick_path_cannot_answer_is_said_as_before(
    daemons: Daemons, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    none = _status(empty)
    assert none.returncode == 2 and "no session for workspace" in none.stderr
    assert "tokend import claude-code FILE" in none.stderr
    missing = _status(empty, "--session", "nope")
    assert missing.returncode == 2 and "`tokend sessions` lists" in missing.stderr
    daemon = _status(empty, "--daemon")
    assert daemon.returncode == 0 and str(os.getpid()) not in daemon.stdout
    assert _status(empty, "--format", "yaml").returncode == 2  # argparse's refusal, as before
