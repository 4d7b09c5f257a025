"""`tokend status` with no daemon: the line printed last time, at once, while the store says its
session has not changed; the store read again (and its line shown) as soon as it has.

Real `tokend import` and `tokend status` processes on one SQLite file, no daemon. Oracles: the
session's figures from `tokend status --json` (the store read in full, a path this work leaves
as it was), the transcripts the test wrote, and what `python -X importtime` imported (a call that
reads the store imports SQLAlchemy; the kept line needs none of it).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file, tokend_env
from tests.daemon.real_daemon import live_pids, real_daemons
from tests.e2e.status_calls import tokend_imports

WAIT_SECONDS = 120.0
HEAVY = ("sqlalchemy", "tokend.service.")  # what opening the store the full way imports


def _tokend(cwd: Path, url: str, *args: str) -> tuple[str, bool]:
    """(stdout, whether the store was opened the full way) of `tokend ARGS` in `cwd`."""
    out, imported = tokend_imports(cwd, *args, env=tokend_env(TOKEND_DATABASE_URL=url))
    return out, any(m.startswith(HEAVY) for m in imported)


def _import(cwd: Path, url: str, transcript: Path) -> dict[str, Any]:
    """`tokend import`, its rows then made as an older tokend wrote them: with no status block
    (a row that has one answers from it first: tests/e2e/test_statusline_status_row.py)."""
    args = ("import", "claude-code", str(transcript), "--workspace", ".", "--json")
    outcome: dict[str, Any] = json.loads(_tokend(cwd, url, *args)[0])
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db, db:
        db.execute("UPDATE sessions SET gauge_state = json_remove(gauge_state, '$.status')")
    return outcome


def _gauge_of(cwd: Path, url: str, *args: str) -> tuple[str, str]:
    """(session id, `used / window tokens`) of the session the full path shows."""
    snapshot = json.loads(_tokend(cwd, url, "status", "--json", *args)[0])
    used = f"{snapshot['usedTokens']:,} / {snapshot['contextWindow']:,} tokens"
    return snapshot["sessionId"], used


def test_with_no_daemon_the_kept_line_while_the_session_is_unchanged(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    older = _import(project, url, session_file("short.jsonl"))
    line, full = _tokend(project, url, "status")  # nothing kept yet: the store is read
    assert full and _gauge_of(project, url)[1] in line
    assert _tokend(project, url, "status") == (line, False)  # kept; the store unchanged

    # a session that changed since in the same folder: it is the one shown now
    lines = session_file("tool_heavy.jsonl").read_text().splitlines()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines[:20]) + "\n")
    newer = _import(project, url, transcript)
    shown, full = _tokend(project, url, "status")
    session_id, used = _gauge_of(project, url)
    assert full and session_id == newer["sessionId"] != older["sessionId"] and used in shown
    assert _tokend(project, url, "status") == (shown, False)

    transcript.write_text("\n".join(lines) + "\n")  # it grows: the kept line is out of date
    assert _import(project, url, transcript)["messages"] > 0
    grown, full = _tokend(project, url, "status")
    session_id, used = _gauge_of(project, url)
    assert full and grown != shown and used in grown
    assert _tokend(project, url, "status") == (grown, False)

    by_id, full = _tokend(project, url, "status", "--session", older["sessionId"])
    assert full and by_id == line  # --session's own line: read once, then kept
    assert _tokend(project, url, "status", "--session", older["sessionId"]) == (line, False)


def test_the_line_a_daemon_gave_is_shown_at_once_once_it_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    with real_daemons(monkeypatch) as daemons:
        monkeypatch.setenv("TOKEND_DATABASE_URL", url)  # the daemon's store: the test's
        _import(project, url, session_file("tool_heavy.jsonl"))
        daemons.serve("--idle-timeout", "0")
        warm, full = _tokend(project, url, "status")  # the daemon answers
        assert not full and _gauge_of(project, url)[1] in warm
        daemon = daemons.processes[0]
        daemon.terminate()
        assert daemon.wait(WAIT_SECONDS) == 0
        assert not live_pids("tokend serve", str(daemons.base))
        assert _tokend(project, url, "status") == (warm, False)  # no daemon: the line kept
