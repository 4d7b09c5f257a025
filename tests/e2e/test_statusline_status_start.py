"""A `tokend status` that finds no daemon starts one in the background and does not wait for it:
the next call is answered by that daemon. Off with TOKEND_START_DAEMON=0 or `[status]
start_daemon = false`; two cold calls at once leave one daemon.

Real `tokend import` (no daemon) and `tokend status` processes on one SQLite file. Oracles: the
daemon's own log (a connection from the second call's process id), the processes running with
the test's runtime folder on their command line, and what `tokend status --daemon` says. Every
daemon started is killed by its process id at teardown (tests/daemon/real_daemon.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, live_pids, real_daemons
from tests.e2e.status_calls import tokend

WAIT_SECONDS = 60.0


@pytest.fixture
def imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """(a project folder with an imported session, its runtime), no daemon, the start on."""
    with real_daemons(monkeypatch) as daemons:
        project = tmp_path / "project"
        project.mkdir()
        args = ("import", "claude-code", str(session_file("short.jsonl")), "--workspace", ".")
        tokend(project, *args)
        monkeypatch.delenv("TOKEND_START_DAEMON", raising=False)
        yield project, daemons


def _daemons(daemons: Daemons) -> set[int]:
    return live_pids("tokend serve", str(daemons.base))


def _answering(project: Path, daemons: Daemons) -> str:
    """`tokend status --daemon` once a daemon answers."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        done = subprocess.run(
            [sys.executable, "-m", "tokend", "status", "--daemon"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS,
        )
        if done.returncode == 0:
            return done.stdout
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.2)


def test_a_cold_status_starts_the_daemon_and_the_next_is_warm(imported: Any) -> None:
    project, daemons = imported
    assert not _daemons(daemons)
    line = tokend(project, "status")
    assert "tokens" in line
    [pid] = list(_daemons(daemons))  # spawned before the command exited, not waited for
    assert f"pid {pid}" in _answering(project, daemons)
    second = subprocess.Popen(
        [sys.executable, "-m", "tokend", "status"], cwd=project, stdout=subprocess.PIPE, text=True
    )
    assert second.communicate(timeout=WAIT_SECONDS)[0] == line
    log = "".join(p.read_text() for p in daemons.log_dir.glob("*.log*"))
    assert f"(unix, pid {second.pid})" in log  # the daemon answered it
    assert _daemons(daemons) == {pid}


def test_two_cold_calls_at_once_leave_one_daemon(imported: Any) -> None:
    project, daemons = imported
    calls = [
        subprocess.Popen(
            [sys.executable, "-m", "tokend", "status"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [c.communicate(timeout=WAIT_SECONDS)[0] for c in calls]
    assert outputs[0] == outputs[1] and b"tokens" in outputs[0]
    _answering(project, daemons)
    deadline = time.monotonic() + WAIT_SECONDS  # a second one would give up once the first answers
    while len(_daemons(daemons)) != 1:
        assert time.monotonic() < deadline, _daemons(daemons)
        time.sleep(0.2)


@pytest.mark.parametrize("how", ["environment", "config"])
def test_the_start_can_be_turned_off(
    imported: Any, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    project, daemons = imported
    if how == "environment":
        monkeypatch.setenv("TOKEND_START_DAEMON", "0")
    else:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text("[status]\nstart_daemon = false\n")
    assert "tokens" in tokend(project, "status")
    time.sleep(1.0)
    assert not _daemons(daemons)


def test_status_help_says_how_to_turn_the_start_off() -> None:
    said = tokend(Path.cwd(), "status", "--help")
    assert "[status] start_daemon = false" in said and "TOKEND_START_DAEMON=0" in said
