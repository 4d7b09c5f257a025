"""`tokend follow` and `tokend watch` as a person leaves them running in a terminal: real
processes against a real daemon that the test stops and starts again, real transcripts."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
BIG = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"  # one automatic compaction at record 1,256


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(runtime.base / "claude"))
        yield runtime


class _Lines:
    """A process's stdout read line by line on a thread, so a test waits with a deadline."""

    def __init__(self, daemons: Daemons, *args: str, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        daemons.processes.append(self.proc)  # type: ignore[arg-type]
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def drain(self) -> None:
        """After the process ended: every line it printed, into `seen`."""
        while (line := self._queue.get(timeout=WAIT_SECONDS)) is not None:
            self.seen.append(line)

    def until(self, wanted: str) -> str:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {wanted!r} in {self.seen}") from None
            assert line is not None, f"the process ended: {self.seen}"
            self.seen.append(line)
            if wanted in line:
                return line


def test_watch_waits_for_a_session_and_for_the_daemon_to_come_back(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    workspace = tmp_path / "app"
    workspace.mkdir()
    watch = _Lines(daemons, "watch", cwd=workspace)
    watch.until(f"no session in {workspace} yet; waiting")

    agent = LspClient.initialized(socket_path(), "agent")
    created = agent.result(
        "session/create", {"model": "gpt-4o", "workspaceUri": workspace.as_uri()}
    )
    text = {"type": "text", "text": "make the build pass " * 50}
    agent.result(
        "session/append",
        {"sessionId": created["sessionId"], "message": {"role": "user", "parts": [text]}},
    )
    used = agent.result("budget/snapshot", {"sessionId": created["sessionId"]})["usedTokens"]
    shown = watch.until(f"{used:,} / 128,000 tokens")  # (it may show the empty session first)
    agent.close()

    stopped = subprocess.run([sys.executable, "-m", "tokend", "stop"], timeout=WAIT_SECONDS)
    assert stopped.returncode == 0
    watch.until("the tokend daemon stopped; waiting for it to come back")
    assert watch.proc.poll() is None
    daemons.serve("--idle-timeout", "0")
    assert watch.until("/ 128,000 tokens") == shown  # attached again to the same session


def test_watch_waiting_for_a_session_does_not_say_the_daemon_stopped(
    daemons: Daemons, tmp_path: Path
) -> None:
    """Found by hand: while it waited for a session, watch said `the tokend daemon stopped`
    every two seconds to a daemon that ran all along (its one-second wait timed the socket's
    reader out, and the next read of that reader failed)."""
    daemons.serve("--idle-timeout", "0")
    workspace = tmp_path / "app"
    workspace.mkdir()
    watch = _Lines(daemons, "watch", cwd=workspace)
    watch.until(f"no session in {workspace} yet; waiting")
    time.sleep(5.0)  # five of watch's one-second looks for a session
    watch.proc.terminate()
    watch.proc.wait(WAIT_SECONDS)
    watch.drain()
    assert [line for line in watch.seen if line.startswith("tokend watch:")] == [
        f"tokend watch: no session in {workspace} yet; waiting for one (Ctrl-C to quit)"
    ], watch.seen


def test_follow_says_when_the_agent_compacted_and_prints_no_line_twice(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    lines = [ln for ln in session_file(BIG).read_text().splitlines() if ln.strip()]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines[:1200]) + "\n")
    follow = _Lines(daemons, "follow", "claude-code", str(transcript), cwd=tmp_path)
    follow.until("tokens")  # the gauge of the first 1,200 records
    with transcript.open("a") as out:  # Claude Code writes on, past its compaction
        for line in lines[1200:1400]:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
    note = follow.until("compacted: ")
    before, after = (
        int(x.replace(",", ""))
        for x in note.split("compacted: ")[1].split(" tokens")[0].split(" -> ")
    )
    assert before > 100_000 and after < before / 2
    time.sleep(3)  # what the follower reads meanwhile is printed too
    follow.proc.terminate()
    follow.proc.wait(timeout=WAIT_SECONDS)
    follow.drain()
    gauges = [line for line in follow.seen if "tokens (" in line]
    assert all(a != b for a, b in zip(gauges, gauges[1:], strict=False)), gauges


def test_tokend_refuses_to_compact_a_followed_session_and_compacts_a_fork_of_it(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(session_file("tool_heavy.jsonl").read_text())
    editor = LspClient.initialized(socket_path(), "editor")
    follower = editor.result("follow/start", {"agent": "claude-code", "path": str(transcript)})
    sid = follower["transcripts"][0]["sessionId"]
    before = editor.result("budget/snapshot", {"sessionId": sid})

    refused = editor.request("session/compact", {"sessionId": sid, "strategy": "prune"})
    assert refused["error"]["code"] == -32602
    assert "follows claude-code's transcript" in refused["error"]["message"]
    assert f"tokend fork {sid}" in refused["error"]["message"]
    cli = subprocess.run(
        [sys.executable, "-m", "tokend", "compact", sid],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert cli.returncode == 2 and "/compact" in cli.stderr, cli.stderr
    after = editor.result("budget/snapshot", {"sessionId": sid})
    assert (after["version"], after["usedTokens"]) == (before["version"], before["usedTokens"])

    fork = editor.result("session/fork", {"sessionId": sid})
    compacted = editor.result(
        "session/compact", {"sessionId": fork["sessionId"], "strategy": "full"}
    )
    assert compacted["after"] < compacted["before"]
