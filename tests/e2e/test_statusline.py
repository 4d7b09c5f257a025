"""`tokend statusline` as Claude Code runs it: a fresh process per refresh, fed its JSON on stdin,
against real daemons (started by the test, or by the command itself in the background).

What must hold: the line is never held up by a daemon that is starting or reading a transcript
for the first time (the figures Claude Code passed are printed at once, marked as such), the
next refresh shows tokend's own figure, and a daemon that follows a transcript the agent is
still writing does not exit for idleness.
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
from tests.daemon.real_daemon import Daemons, live_pids, real_daemons
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
BIG = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"  # 2.7 MB: its first read takes seconds


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        yield runtime


def _given(transcript: Path, session_id: str, **extra: Any) -> str:
    return json.dumps(
        {"session_id": session_id, "transcript_path": str(transcript), "cwd": "/", **extra}
    )


CLAUDE_FIGURES = {
    "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
    "cost": {"total_cost_usd": 11.85},
    "context_window": {
        "context_window_size": 200_000,
        "used_percentage": 38.7,
        "current_usage": {
            "input_tokens": 3,
            "output_tokens": 500,
            "cache_creation_input_tokens": 1000,
            "cache_read_input_tokens": 76_331,
        },
    },
}


def _statusline(stdin: str, *args: str, colour: bool = False) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if not colour:
        env["NO_COLOR"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "tokend", "statusline", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _until_tokend_line(stdin: str) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        line = _statusline(stdin)
        if "compacts at" in line:
            return line
        assert time.monotonic() < deadline, line
        time.sleep(0.3)


def test_with_no_daemon_the_first_line_is_claude_codes_figures_and_tokend_starts_behind(
    daemons: Daemons, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    stdin = _given(transcript, "cold-1", **CLAUDE_FIGURES)

    first = _statusline(stdin)
    assert first == "claude-opus-4-6 · 77k/200k · 39% · $11.85 · tokend starting"
    # the command started the daemon and the follower in the background: the next refresh
    # gets tokend's own line, and the daemon is a real process of this test's runtime folder
    line = _until_tokend_line(stdin)
    assert line.startswith("claude-opus-4-6 · ") and "compacts at 168k" in line
    assert socket_path().exists()
    assert live_pids("tokend serve", str(daemons.base))


def test_without_claude_codes_figures_the_last_line_is_shown_while_tokend_starts(
    daemons: Daemons, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    stdin = _given(transcript, "cold-2")
    assert _statusline(stdin) == "tokend: starting"
    line = _until_tokend_line(stdin)
    remembered = daemons.base / "run" / "tokend" / "statusline" / "cold-2"
    assert remembered.read_text() == line
    assert oct(remembered.stat().st_mode & 0o777) == "0o600"

    subprocess.run([sys.executable, "-m", "tokend", "stop"], check=True, timeout=WAIT_SECONDS)
    assert _statusline(stdin) == line  # the daemon is gone: the last line, at once


def test_a_line_is_kept_for_its_segments_and_never_shown_for_others(
    daemons: Daemons, tmp_path: Path
) -> None:
    """A refresh that cannot wait for the daemon shows the last line of the same segments
    (8148dde kept one line a session: the line of `--segments cost,model` came back for the
    whole line, and a slow refresh of one showed the other's)."""
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    stdin = _given(transcript, "cold-3")
    line = _until_tokend_line(stdin)
    deadline = time.monotonic() + WAIT_SECONDS
    while not (picked := _statusline(stdin, "--segments", "cost,model")).startswith("$"):
        assert time.monotonic() < deadline, picked
        time.sleep(0.3)
    assert len(picked.split(" · ")) == 2

    subprocess.run([sys.executable, "-m", "tokend", "stop"], check=True, timeout=WAIT_SECONDS)
    assert _statusline(stdin) == line
    assert _statusline(stdin, "--segments", "cost,model") == picked
    assert _statusline(stdin, "--segments", "model") == "tokend: starting"


def test_a_daemon_reading_a_long_transcript_for_the_first_time_does_not_hold_the_line(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    transcript = tmp_path / BIG
    shutil.copy(session_file(BIG), transcript)
    stdin = _given(transcript, "big-1", **CLAUDE_FIGURES)
    assert _statusline(stdin).endswith("· tokend starting")
    line = _until_tokend_line(stdin)  # the daemon read on after the first call left
    assert line.startswith("claude-opus-4-6 · 77k/200k · 39% · compacts at 168k · $11.8")


def test_a_daemon_following_a_transcript_being_written_stays_up_with_no_connection(
    daemons: Daemons, tmp_path: Path
) -> None:
    stderr = daemons.serve("--idle-timeout", "1")
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    _until_tokend_line(_given(transcript, "alive-1"))
    daemon = daemons.processes[0]
    for _ in range(8):  # four idle timeouts, the agent writing now and then
        time.sleep(0.5)
        os.utime(transcript)
        assert daemon.poll() is None, stderr.read_text()
    quiet = time.time() - 7200  # the agent stopped writing two hours ago: idle exit as before
    os.utime(transcript, (quiet, quiet))
    assert daemon.wait(timeout=WAIT_SECONDS) == 0


def test_segments_from_a_real_daemon_with_claude_codes_rate_limits(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    limits = {"five_hour": {"used_percentage": 42.4, "resets_at": time.time() + 7800}}
    stdin = _given(transcript, "seg-1", rate_limits=limits)
    line = _until_tokend_line(stdin)
    assert "5h 42% ↻2h" in line and "cache cold" in line  # the transcript's last call is old
    picked = _statusline(stdin, "--segments", "cost,model")
    cost = next(part for part in line.split(" · ") if part.startswith("$"))
    assert picked == f"{cost} · claude-opus-4-6"
    coloured = _statusline(stdin, colour=True)
    assert (
        "\033[32m" in coloured and coloured.replace("\033[32m", "").replace("\033[0m", "") == line
    )
    wrong = _statusline(stdin, "--segments", "speed")
    assert wrong.startswith("tokend: unknown segment speed")
