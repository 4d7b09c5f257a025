"""`tokend import` twice, `tokend sessions`, delete/restore/rename, `tokend compact`, `tokend stop`:
the real CLI as a user runs it, on a real SQLite file, with and without a real daemon running.

The oracle is the database file itself (read with sqlite3, not through tokend) and the daemon's
own answers over its socket.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import BIG_SESSION, sessions_dir_or_skip
from tests.in_process import tokend_cli
from tests.lsp_client import LspClient
from tokend.daemon.spawn import ENV_DAEMON_CMD

SESSION_NOT_FOUND = -33001


@dataclass
class Home:
    """One user's machine: private XDG dirs, a store, a workspace folder, maybe a daemon."""

    base: Path
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def db(self) -> Path:
        return self.base / "tokend.sqlite3"

    @property
    def workspace(self) -> Path:
        return self.base / "ws"

    @property
    def socket(self) -> Path:
        return self.base / "run" / "tokend" / "daemon.sock"

    def tokend(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`tokend ARGS` by `tokend.cli.main` in this process (tests/in_process.py)."""
        return tokend_cli(*args, cwd=cwd or self.workspace, env=self.env)

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        done = self.tokend(*args, cwd=cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def json(self, *args: str) -> dict:
        return json.loads(self.ok(*args, "--json"))

    def serve(self) -> subprocess.Popen[bytes]:
        """`tokend serve` in the foreground, on the default socket, ready when it says so."""
        log = self.base / "serve.err"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend", "serve"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.processes.append(proc)
        deadline = time.monotonic() + 20
        while "tokend: ready" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        return proc

    def client(self) -> LspClient:
        client = LspClient.unix(self.socket)
        assert "result" in client.initialize("test editor")
        return client

    def messages(self, session_id: str) -> int:
        with sqlite3.connect(self.db) as conn:
            query = "SELECT count(*) FROM messages WHERE session_id = ?"
            return conn.execute(query, (session_id,)).fetchone()[0]

    def session_rows(self) -> list[tuple[str, str | None, str | None, str | None]]:
        """(id, workspace_uri, title, deleted_at) of every session on disk."""
        with sqlite3.connect(self.db) as conn:
            query = "SELECT id, workspace_uri, title, deleted_at FROM sessions ORDER BY id"
            return conn.execute(query).fetchall()


@pytest.fixture
def home() -> Iterator[Home]:
    base = Path(tempfile.mkdtemp(prefix="tks-"))  # short: a unix socket path holds ~104 bytes
    (base / "run").mkdir(mode=0o700)
    (base / "ws").mkdir()
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (base / var.lower()).mkdir()
        env[var] = str(base / var.lower())
    env.update(
        XDG_RUNTIME_DIR=str(base / "run"),
        HOME=str(base),
        TOKEND_DATABASE_URL=f"sqlite:///{base}/tokend.sqlite3",
    )
    for var in (ENV_DAEMON_CMD, "NO_COLOR", "FORCE_COLOR"):
        env.pop(var, None)
    home = Home(base, env)
    yield home
    for proc in home.processes:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    shutil.rmtree(base, ignore_errors=True)


def transcript(name: str) -> Path:
    return sessions_dir_or_skip() / name


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _growing(source: Path, tmp_path: Path) -> Path:
    """A copy of the transcript's first half (cut cleanly), as Claude Code had written it then."""
    lines = [line for line in source.read_text().splitlines() if line.strip()]
    growing = tmp_path / source.name
    growing.write_text("\n".join(lines[: _prefix_cut([json.loads(x) for x in lines])]) + "\n")
    return growing


def _grow(source: Path, growing: Path) -> None:
    """The rest of the transcript, appended as Claude Code appends it."""
    growing.write_text(source.read_text())


def _prefix_cut(records: list[dict]) -> int:
    """A cut after a user record that leaves no assistant response split in two."""
    ids = [
        (r.get("message") or {}).get("id") if r["type"] == "assistant" else None for r in records
    ]
    cuts = [
        i + 1
        for i, record in enumerate(records)
        if record["type"] == "user"
        and not set(filter(None, ids[: i + 1])) & set(filter(None, ids[i + 1 :]))
        and any(r["type"] == "assistant" for r in records[: i + 1])
        and any(r["type"] == "assistant" for r in records[i + 1 :])
    ]
    assert cuts, "the transcript has no clean cut"
    return cuts[len(cuts) // 2]


# -- import -------------------------------------------------------------------------------------


def test_importing_a_transcript_twice_makes_one_session_and_adds_nothing(home: Home) -> None:
    path = transcript("tool_heavy.jsonl")
    first = home.json("import", "claude-code", str(path), "--workspace", str(home.workspace))
    assert first["created"] and first["messages"] > 0
    stored = home.messages(first["sessionId"])
    assert stored == first["messages"]

    again = home.json("import", "claude-code", str(path))
    assert again["sessionId"] == first["sessionId"] and not again["created"]
    assert (again["messages"], again["calls"], again["compactions"]) == (0, 0, 0)
    assert home.messages(first["sessionId"]) == stored
    assert len(home.session_rows()) == 1
    said = home.ok("import", "claude-code", str(path))
    assert "nothing new" in said and first["sessionId"] in said
    listed = home.json("sessions")["sessions"]
    assert [s["sessionId"] for s in listed] == [first["sessionId"]]


def test_a_grown_transcript_adds_only_what_is_new(home: Home, tmp_path: Path) -> None:
    source = transcript(BIG_SESSION.name)
    growing = _growing(source, tmp_path)
    first = home.json("import", "claude-code", str(growing), "--workspace", str(home.workspace))
    assert first["compactions"] == 0  # Claude Code's compaction is in the part still to come
    _grow(source, growing)
    second = home.json("import", "claude-code", str(growing))
    assert second["sessionId"] == first["sessionId"] and second["messages"] > 0
    assert second["compactions"] == 1

    # The oracle: the whole transcript imported at once, into a store of its own; the usage the
    # provider reported (totals, the last call) must be the same, message for message.
    other = f"sqlite:///{tmp_path}/whole.sqlite3"
    whole = home.ok(
        "--database-url", other,
        "import", "claude-code", str(source), "--workspace", str(home.workspace), "--json",
    )  # fmt: skip
    expected = json.loads(whole)
    assert first["messages"] + second["messages"] == expected["messages"]
    with sqlite3.connect(tmp_path / "whole.sqlite3") as conn:
        rows = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert home.messages(first["sessionId"]) == rows  # the boundary's summary is a row too
    assert first["calls"] + second["calls"] == expected["calls"]
    ours = home.json("status", "--session", first["sessionId"])
    theirs = json.loads(
        home.ok("--database-url", other, "status", "--session", expected["sessionId"], "--json")
    )
    assert ours["totals"] == theirs["totals"] and ours["totals"]["calls"] == expected["calls"]
    assert ours["lastCall"]["contextTokens"] == theirs["lastCall"]["contextTokens"]


def test_the_session_belongs_to_the_transcripts_working_directory(home: Home) -> None:
    path = transcript("short.jsonl")
    cwd = next(r["cwd"] for r in _records(path) if r.get("cwd"))
    imported = home.json("import", "claude-code", str(path))
    assert imported["workspaceUri"] == Path(cwd).as_uri()
    assert home.session_rows()[0][1] == Path(cwd).as_uri()
    assert "0 sessions in" in home.ok("sessions")  # the cwd here is another workspace
    everywhere = home.ok("sessions", "--all-workspaces")
    assert imported["sessionId"] in everywhere and cwd in everywhere


# -- sessions -------------------------------------------------------------------------------------


def test_sessions_lists_gauges_newest_first_and_counts_them(home: Home) -> None:
    ws = str(home.workspace)
    assert "0 sessions in" in home.ok("sessions")
    older = home.json("import", "claude-code", str(transcript("short.jsonl")), "--workspace", ws)
    table = home.ok("sessions")
    assert "1 session in" in table and "1 sessions" not in table
    newer = home.json(
        "import", "claude-code", str(transcript("tool_heavy.jsonl")), "--workspace", ws
    )
    listed = home.json("sessions")["sessions"]
    assert [s["sessionId"] for s in listed] == [newer["sessionId"], older["sessionId"]]
    assert listed[0]["usedTokens"] == newer["usedTokens"]
    assert listed[0]["contextWindow"] == 200_000 and listed[0]["model"] == "claude-opus-4-6"
    table = home.ok("sessions")
    assert "2 sessions in" in table
    lines = table.splitlines()
    header, rows = lines[0], lines[1:3]
    assert header.split() == ["session", "used", "/", "window", "%", "model", "title", "updated"]
    assert (
        rows[0].startswith(newer["sessionId"]) and f"{newer['usedTokens']:,} / 200,000" in rows[0]
    )
    # aligned: each row's figures end where the header's column does
    end = header.index("window") + len("window")
    assert all(row[:end].endswith("200,000") for row in rows)
    assert "\x1b[" not in table  # not a terminal: no colour codes


def test_delete_hides_restore_brings_back_and_the_store_keeps_everything(home: Home) -> None:
    ws = str(home.workspace)
    imported = home.json(
        "import", "claude-code", str(transcript("tool_heavy.jsonl")), "--workspace", ws
    )
    sid = imported["sessionId"]
    stored = home.messages(sid)

    deleted = home.json("sessions", "delete", sid)
    assert deleted["sessionId"] == sid and deleted["deletedAt"]
    assert home.json("sessions")["sessions"] == []
    assert "0 sessions in" in home.ok("sessions")
    trash = home.ok("sessions", "--deleted")
    assert sid in trash and "1 deleted session in" in trash
    assert home.messages(sid) == stored
    assert home.session_rows()[0][3] is not None

    assert "restored" in home.ok("sessions", "restore", sid)
    assert [s["sessionId"] for s in home.json("sessions")["sessions"]] == [sid]
    assert home.messages(sid) == stored and home.session_rows()[0][3] is None

    home.ok("sessions", "rename", sid, "parser refactor")
    assert home.json("sessions")["sessions"][0]["title"] == "parser refactor"

    missing = home.tokend("sessions", "delete", "01NOSUCHSESSION0000000000")
    assert missing.returncode == 2 and "tokend sessions" in missing.stderr


def test_compact_without_a_daemon_prunes_and_says_so(home: Home) -> None:
    _prune_eagerly(home)
    ws = str(home.workspace)
    imported = home.json(
        "import", "claude-code", str(transcript(BIG_SESSION.name)), "--workspace", ws
    )
    result = home.json("compact")  # the workspace's active session
    assert result["before"] == imported["usedTokens"] > result["after"]
    assert [a["kind"] for a in result["actions"]] == ["prune"]
    assert result["snapshot"]["usedTokens"] == result["after"]
    # Nothing is left to prune: the next tier summarizes (the user asked to compact).
    again = home.ok("compact", imported["sessionId"])
    assert "extractive summary" in again and "originals kept in the store" in again


def test_stop_without_a_daemon_says_so(home: Home) -> None:
    done = home.tokend("stop")
    assert done.returncode == 0 and "no daemon running" in done.stdout


# -- with a daemon running ------------------------------------------------------------------------


def test_changes_go_through_the_running_daemon(home: Home, tmp_path: Path) -> None:
    _prune_eagerly(home)
    source = transcript(BIG_SESSION.name)
    growing = _growing(source, tmp_path)
    sid = home.json("import", "claude-code", str(growing), "--workspace", str(home.workspace))[
        "sessionId"
    ]

    daemon = home.serve()
    editor = home.client()
    attached = editor.request("session/attach", {"sessionId": sid})["result"]

    # An import the daemon did not make: it reads the session again.
    _grow(source, growing)
    grown = home.json("import", "claude-code", str(growing))
    assert grown["usedTokens"] != attached["usedTokens"]
    now = editor.request("session/attach", {"sessionId": sid})["result"]
    assert now["usedTokens"] == grown["usedTokens"]

    # compact: the attached editor hears of it, so the daemon did it
    result = home.json("compact", sid)
    assert result["before"] > result["after"]
    compacted = _notification(editor, "session/didCompact")
    assert compacted["sessionId"] == sid and compacted["after"] == result["after"]

    home.ok("sessions", "rename", sid, "through the daemon")
    assert home.session_rows()[0][2] == "through the daemon"

    # delete: the daemon no longer serves it from memory
    stored = home.messages(sid)
    home.ok("sessions", "delete", sid)
    refused = editor.request("session/attach", {"sessionId": sid})
    assert refused["error"]["code"] == SESSION_NOT_FOUND
    loaded = editor.request("daemon/status")["result"]["sessions"]
    assert sid not in [s["sessionId"] for s in loaded]
    assert home.messages(sid) == stored

    home.ok("sessions", "restore", sid)
    assert editor.request("session/attach", {"sessionId": sid})["result"]["sessionId"] == sid
    editor.close()

    stopped = home.tokend("stop")
    assert stopped.returncode == 0 and f"pid {daemon.pid}" in stopped.stdout
    assert daemon.wait(timeout=15) == 0
    assert not home.socket.exists()
    assert "no daemon running" in home.ok("stop")


def _prune_eagerly(home: Home) -> None:
    """User settings under which the small transcripts have old tool output to prune."""
    config = home.base / "xdg_config_home" / "tokend" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[compaction]\nprune_protect_tokens = 1000\nprune_minimum_tokens = 0\n")


def _notification(client: LspClient, method: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for i, note in enumerate(client.notifications):
            if note.get("method") == method:
                return client.notifications.pop(i)["params"]
        client.notifications.append(client.read_message(max(0.0, deadline - time.monotonic())))


def _on_a_terminal(home: Home, *args: str, **env: str) -> str:
    """What `tokend ARGS` writes to a pseudo-terminal (80 columns)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokend", *args],
        cwd=home.workspace,
        env={**home.env, "TERM": "xterm-256color", **env},
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only_and_never_with_no_color(home: Home) -> None:
    ws = str(home.workspace)
    home.ok("import", "claude-code", str(transcript("short.jsonl")), "--workspace", ws)
    coloured = _on_a_terminal(home, "sessions")
    assert "\x1b[" in coloured and "1 session in" in coloured
    plain = _on_a_terminal(home, "sessions", NO_COLOR="1")
    assert "\x1b[" not in plain and "1 session in" in plain


def test_compact_without_a_daemon_prints_what_session_compact_answers(home: Home) -> None:
    """protocol.md: an action's `messageId` is sent only for a summary. Computed on the store,
    `tokend compact --json` printed `"messageId": null` for every action and lost the summary's
    id; the oracle is the summary message on disk."""
    _prune_eagerly(home)
    ws = str(home.workspace)
    sid = home.json("import", "claude-code", str(transcript(BIG_SESSION.name)), "--workspace", ws)[
        "sessionId"
    ]
    pruned = home.json("compact", sid)
    assert [a["kind"] for a in pruned["actions"]] == ["prune"]
    assert "messageId" not in pruned["actions"][0]
    summarized = home.json("compact", sid)  # nothing left to prune: the next tier summarizes
    [summary] = [a for a in summarized["actions"] if "messageId" in a]
    with sqlite3.connect(home.db) as conn:
        query = "SELECT id FROM messages WHERE session_id = ? AND summary = 1 ORDER BY seq"
        stored = [row[0] for row in conn.execute(query, (sid,))]
    assert stored[-1] == summary["messageId"]  # the newest summary (the transcript had its own)
