"""`tokend fork` and `tokend handoff` as a user runs them: on the store when no daemon runs,
through the real daemon (`tokend serve`) when one does. Oracles: the database file read with
sqlite3, the files on disk, the messages this test appended."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.appending import append
from tests.in_process import tokend_cli
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.daemon.spawn import ENV_DAEMON_CMD
from tokend.service.app import open_service


@pytest.fixture
def home() -> Iterator[dict]:
    base = Path(tempfile.mkdtemp(prefix="tkf-"))  # short: a unix socket path holds ~104 bytes
    (base / "run").mkdir(mode=0o700)
    (base / "ws" / "src").mkdir(parents=True)
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (base / var.lower()).mkdir()
        env[var] = str(base / var.lower())
    env.update(XDG_RUNTIME_DIR=str(base / "run"), HOME=str(base))
    env["TOKEND_DATABASE_URL"] = f"sqlite:///{base}/tokend.sqlite3"
    env.pop(ENV_DAEMON_CMD, None)
    processes: list[subprocess.Popen[bytes]] = []
    yield {"base": base, "env": env, "processes": processes}
    for proc in processes:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    shutil.rmtree(base, ignore_errors=True)


def tokend(home: dict, *args: str) -> dict:
    done = tokend_cli(*args, "--json", cwd=home["base"] / "ws", env=home["env"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def rows(home: dict, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(home["base"] / "tokend.sqlite3") as connection:
        return connection.execute(sql, args).fetchall()


def seed(home: dict) -> tuple[str, list[str]]:
    """A session of the workspace: a request, a read and an edit of real files, an answer."""
    ws = home["base"] / "ws"
    (ws / "src" / "app.py").write_text("def main():\n    return 'app'\n")
    (ws / "src" / "util.py").write_text("def helper():\n    return 'util'\n")
    service = open_service(None, home["env"]["TOKEND_DATABASE_URL"])
    sid = service.sessions.create_session("gpt-4o", workspace_uri=ws.resolve().as_uri()).id
    ids = [append(service, sid, "user", [TextPart("tidy up app.py, keep util.py as is")])[0].id]
    for i, (tool, path) in enumerate((("Read", "src/util.py"), ("Edit", "src/app.py"))):
        call = ToolCallPart(f"c{i}", tool, {"file_path": path})
        ids.append(append(service, sid, "assistant", [call])[0].id)
        ids.append(append(service, sid, "user", [ToolResultPart(f"c{i}", tool, "ok")])[0].id)
    ids.append(append(service, sid, "assistant", [TextPart("app.py is tidy.")])[0].id)
    service.close()
    return sid, ids


def serve(home: dict) -> None:
    log = home["base"] / "serve.err"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "serve"],
            env=home["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    home["processes"].append(proc)
    deadline = time.monotonic() + 20
    while "tokend: ready" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def test_fork_and_handoff_on_the_store_then_through_the_daemon(home):
    sid, ids = seed(home)
    # No daemon: the store. Without SESSION, the workspace's active session.
    forked = tokend(home, "fork", "--at", ids[2])
    assert forked["parentId"] == sid and forked["messages"] == 3
    copied = rows(home, "SELECT count(*) FROM messages WHERE session_id = ?", forked["sessionId"])
    assert copied == [(3,)]
    handed = tokend(home, "handoff", sid, "--goal", "add tests for util.py")
    assert handed["parentId"] == sid
    assert [(f["path"], f["included"]) for f in handed["files"]] == [
        ("src/util.py", True),  # named by the goal
        ("src/app.py", True),
    ]
    [(raw,)] = rows(
        home,
        "SELECT p.data FROM parts p JOIN messages m ON p.message_id = m.id WHERE m.session_id = ?",
        handed["sessionId"],
    )
    text = json.loads(raw)["summary"]
    ws = home["base"] / "ws" / "src"
    for name in ("util.py", "app.py"):
        assert (ws / name).read_text().rstrip() in text
    assert "tidy up app.py, keep util.py as is" in text
    parent_rows = rows(home, "SELECT count(*) FROM messages WHERE session_id = ?", sid)
    assert parent_rows == [(len(ids),)]
    # A daemon runs: the commands go through it. The CLI's own store is made unusable, so only
    # the daemon can have answered.
    serve(home)
    home["env"]["TOKEND_DATABASE_URL"] = f"sqlite:///{home['base']}/missing/none.sqlite3"
    forked = tokend(home, "fork", sid)
    assert forked["messages"] == len(ids)
    handed = tokend(home, "handoff", sid, "--goal", "ship it")
    assert [f["path"] for f in handed["files"]] == ["src/app.py", "src/util.py"]
    parents = rows(
        home,
        "SELECT parent_id FROM sessions WHERE id IN (?, ?)",
        *[
            forked["sessionId"],
            handed["sessionId"],
        ],
    )
    assert parents == [(sid,), (sid,)]
