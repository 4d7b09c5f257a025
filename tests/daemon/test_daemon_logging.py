"""The real daemon's log and window/logMessage: who hears of a problem, what the files hold.

Real processes: `python -m tokend serve` in the foreground, or started detached by the
`python -m tokend lsp` forwarder as an editor would; the oracle is the bytes on disk and the
messages on the wire.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.abuse import live_pids
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient, frame
from tokend.daemon import paths

SECRET = "sk-live-4f1c2e9d"
BAD_APPEND = {"sessionId": "nope", "message": {"role": "user", "parts": f"{SECRET} pasted"}}


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _log_messages(client: LspClient) -> list[dict]:
    return [n["params"] for n in client.notifications if n["method"] == "window/logMessage"]


def test_a_connections_malformed_frame_is_told_to_that_connection_alone(
    daemons: Daemons,
) -> None:
    daemons.serve()
    sender, bystander = LspClient.unix(paths.socket_path()), LspClient.unix(paths.socket_path())
    assert "result" in sender.initialize("sender")
    assert "result" in bystander.initialize("bystander")
    sender.send_raw(frame(b"{not json"))
    told = sender.read_message(10)
    assert told["method"] == "window/logMessage", told
    assert told["params"]["type"] == 2  # Warning
    assert "malformed message" in told["params"]["message"]
    assert sender.read_message(10)["error"]["code"] == -32700  # the reply to the frame itself
    # Anything sent to every client would have been queued before the sender's own copy.
    assert "result" in bystander.request("daemon/status")
    assert _log_messages(bystander) == []


def test_a_refused_request_is_one_info_line_and_no_traceback(daemons: Daemons) -> None:
    stderr_file = daemons.serve()
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("careless")
    for _ in range(20):
        assert client.request("session/append", BAD_APPEND)["error"]["code"] == -32602
    log = daemons.log_text()
    lines = [line for line in log.splitlines() if "session/append failed" in line]
    assert len(lines) == 20
    assert all(
        " INFO tokend.lsp.protocol: session/append failed: code -32602, " in x for x in lines
    )
    assert "Traceback" not in log and "Traceback" not in stderr_file.read_text()
    assert SECRET not in log
    assert _log_messages(client) == []  # the error reply said it all


def test_a_spawned_daemon_keeps_its_stderr_file_for_crashes(daemons: Daemons) -> None:
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('log_level = "loud"\n')  # a warning while the daemon starts
    daemons.log_dir.mkdir(parents=True, mode=0o700)
    stderr_file = daemons.log_dir / "daemon.stderr"
    stderr_file.write_text("left by an earlier daemon\n" * 1000)
    stderr_file.chmod(0o644)
    editor = daemons.editor()
    assert "result" in editor.initialize("editor")
    for _ in range(3000):
        assert "error" in editor.request("session/append", BAD_APPEND)
    pid = editor.request("daemon/status")["result"]["pid"]

    assert stderr_file.stat().st_size == 0  # emptied at start; the log went to the log file only
    log_file = daemons.log_dir / "daemon.log"
    for path in (stderr_file, log_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    log = daemons.log_text()
    assert log.count("session/append failed: code -32602") == 3000
    assert "Traceback" not in log and SECRET not in log
    assert "log_level = 'loud' is invalid" in log
    assert sum(p.stat().st_size for p in daemons.log_dir.glob("daemon.log*")) < 4 << 20

    os.kill(pid, signal.SIGSEGV)  # a fatal error: faulthandler writes it to the stderr file
    deadline = time.monotonic() + 10
    while pid in live_pids("tokend serve", str(daemons.base)) and time.monotonic() < deadline:
        time.sleep(0.05)
    crash = stderr_file.read_text()
    assert "Fatal Python error: Segmentation fault" in crash
    assert "tokend" in crash  # the Python stack of the daemon's threads


def test_a_malformed_body_never_reaches_the_log(daemons: Daemons) -> None:
    daemons.serve()
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("leaky")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "params": {"apiKey": SECRET}}).encode()
    client.send_raw(frame(body[:-20] + b"\xff\xfe" + body[-20:]))  # not UTF-8
    assert client.read_message(10)  # the log line (window/logMessage) or the reply
    assert "result" in client.request("daemon/status")
    assert "malformed message" in daemons.log_text()
    assert SECRET not in daemons.log_text()
