"""The real tokend daemon: editors share sessions through `tokend lsp` forwarders and a unix socket.

Real processes and sockets: `python -m tokend lsp` (the forwarder editors spawn) starts the real
`python -m tokend serve` on first use, on a real SQLite file.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.daemon.abuse import discard_until_closed, live_pids, malformed_frames, rss_kib
from tests.lsp_client import LspClient, frame
from tokend.daemon import paths
from tokend.daemon.spawn import ENV_DAEMON_CMD


class RealRuntime:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.processes: list[subprocess.Popen[bytes]] = []

    def forwarder(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(proc)
        return proc

    def serve(self, *args: str) -> tuple[subprocess.Popen[bytes], str]:
        log = self.base / f"serve-{len(self.processes)}.err"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend", "serve", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self.processes.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = log.read_text()
            if "tokend: ready" in text:
                return proc, text
            assert proc.poll() is None, text
            time.sleep(0.05)
        raise AssertionError(log.read_text())

    def daemon_pids(self) -> set[int]:
        return live_pids("tokend serve", str(self.base))

    def cleanup(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for pid in self.daemon_pids():
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def real(monkeypatch: pytest.MonkeyPatch) -> Iterator[RealRuntime]:
    base = Path(tempfile.mkdtemp(prefix="tkr-"))  # short: unix socket paths are ~104 bytes at most
    (base / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "run"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("TOKEND_DATABASE_URL", f"sqlite:///{base}/tokend.sqlite3")
    monkeypatch.delenv(ENV_DAEMON_CMD, raising=False)
    runtime = RealRuntime(base)
    yield runtime
    runtime.cleanup()
    shutil.rmtree(base, ignore_errors=True)


def _text(text: str) -> dict:
    return {"role": "user", "parts": [{"type": "text", "text": text}]}


def _next_change(client: LspClient, version: int) -> dict:
    """The budget/didChange that reports `version` (earlier ones may be queued)."""
    while True:
        for i, note in enumerate(client.notifications):
            if (
                note["method"] == "budget/didChange"
                and note["params"]["snapshot"]["version"] == version
            ):
                return client.notifications.pop(i)["params"]
        client.notifications.append(client.read_message(10))


def test_two_editors_and_a_cli_share_one_session(real: RealRuntime) -> None:
    editors = [real.forwarder(), real.forwarder()]
    editor_1, editor_2 = (LspClient.process(p) for p in editors)
    assert "result" in editor_1.initialize("editor-1")
    assert "result" in editor_2.initialize("editor-2")
    cli = LspClient.unix(paths.socket_path())
    assert "result" in cli.initialize("cli")
    assert len(real.daemon_pids()) == 1

    sid = editor_1.request("session/create", {"model": "gpt-4o", "workspaceUri": "file:///w"})[
        "result"
    ]["sessionId"]
    assert editor_2.request("session/attach", {"sessionId": sid})["result"]["version"] == 0
    assert cli.request("session/attach", {"sessionId": sid})["result"]["sessionId"] == sid

    appended = editor_1.request(
        "session/append", {"sessionId": sid, "message": _text("hello from one")}
    )
    version = appended["result"]["version"]
    for other in (editor_2, cli):
        change = _next_change(other, version)
        assert change["sessionId"] == sid and change["snapshot"]["usedTokens"] > 0

    status = cli.request("daemon/status")["result"]
    by_name = {c["clientName"]: c for c in status["connections"]}
    assert {"editor-1", "editor-2", "cli"} <= set(by_name)
    assert all(by_name[n]["sessionId"] == sid for n in ("editor-1", "editor-2", "cli"))
    assert [s["sessionId"] for s in status["sessions"]] == [sid]
    assert status["sessions"][0]["connections"] == 3

    # a stale ifVersion is refused with the current version
    stale = cli.request(
        "session/append", {"sessionId": sid, "message": _text("late"), "ifVersion": version - 1}
    )
    assert stale["error"]["code"] == -33006
    assert stale["error"]["data"]["currentVersion"] == version

    # editor 1 leaves with shutdown + exit: the others are served on
    assert "result" in editor_1.request("shutdown")
    editor_1.notify("exit")
    assert editors[0].wait(10) == 0
    second = editor_2.request("session/append", {"sessionId": sid, "message": _text("still here")})
    assert _next_change(cli, second["result"]["version"])["sessionId"] == sid

    # editor 2's forwarder is killed: the session and the daemon carry on
    editors[1].kill()
    editors[1].wait()
    snap = cli.request("budget/snapshot", {"sessionId": sid})["result"]
    assert snap["version"] == second["result"]["version"]
    assert len(real.daemon_pids()) == 1


def test_five_editors_starting_at_once_make_one_daemon(real: RealRuntime) -> None:
    procs = [real.forwarder() for _ in range(5)]
    clients = [LspClient.process(p) for p in procs]
    with ThreadPoolExecutor(5) as pool:
        replies = list(pool.map(lambda ic: ic[1].initialize(f"editor-{ic[0]}"), enumerate(clients)))
    assert all("result" in r for r in replies)
    assert len(real.daemon_pids()) == 1
    status = clients[0].request("daemon/status")["result"]
    assert len(status["connections"]) == 5


def test_tcp_listener_requires_the_token(real: RealRuntime) -> None:
    proc, text = real.serve(
        "--listen", f"unix:{paths.socket_path()}", "--listen", "tcp:127.0.0.1:0"
    )
    port = int(re.search(r"tcp:127\.0\.0\.1:(\d+)", text).group(1))
    without = LspClient.tcp("127.0.0.1", port)
    assert without.initialize("no-token")["error"]["code"] == -33007
    assert without.wait_closed()
    wrong = LspClient.tcp("127.0.0.1", port)
    assert wrong.initialize("wrong", {"authToken": "nope"})["error"]["code"] == -33007
    token = paths.read_token()
    right = LspClient.tcp("127.0.0.1", port)
    assert "result" in right.initialize("right", {"authToken": token})
    created = right.request("session/create", {"model": "gpt-4o"})
    assert "sessionId" in created["result"]
    assert os.stat(paths.token_path()).st_mode & 0o777 == 0o600


def test_idle_daemon_exits_and_removes_its_socket(real: RealRuntime) -> None:
    proc, _ = real.serve("--idle-timeout", "1")
    sock = paths.socket_path()
    assert sock.exists()
    client = LspClient.unix(sock)
    assert "result" in client.initialize("brief")
    client.close()
    assert proc.wait(15) == 0
    assert not sock.exists()


def _bad_tokend_requests() -> list[bytes]:
    """Well-framed JSON-RPC that tokend's handlers must refuse with an error reply."""

    def call(method: str, params: object) -> bytes:
        return frame({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})

    return [
        call("session/append", "not an object"),
        call("session/append", {"sessionId": "x", "message": {"role": "robot", "parts": []}}),
        call(
            "session/append",
            {"sessionId": "x", "message": {"role": "user", "parts": [{"type": "?"}]}},
        ),
        call("budget/snapshot", {}),
        call("session/create", {"model": 42}),
        call("context/assemble", {"sessionId": "x", "format": "xml"}),
        call("no/such/method", None),
    ]


def test_a_thousand_bad_frames_on_one_connection_leave_the_others_served(real: RealRuntime) -> None:
    proc, _ = real.serve()
    good = LspClient.unix(paths.socket_path())
    assert "result" in good.initialize("good")
    sid = good.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]

    def open_bad() -> socket.socket:
        bad = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bad.connect(str(paths.socket_path()))
        threading.Thread(target=discard_until_closed, args=(bad,), daemon=True).start()
        bad.sendall(
            frame(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}
            )
        )
        return bad

    frames = malformed_frames() + _bad_tokend_requests()
    bad = open_bad()
    baseline_kib = 0
    for sent in range(1000):
        try:
            bad.sendall(frames[sent % len(frames)])
        except OSError:
            bad.close()
            bad = open_bad()
        if sent % 50 == 0:
            appended = good.request(
                "session/append", {"sessionId": sid, "message": _text(f"ping {sent}")}
            )
            assert "result" in appended, appended
        if sent == 200:
            baseline_kib = rss_kib(proc.pid)
    snap = good.request("budget/snapshot", {"sessionId": sid})["result"]
    assert snap["version"] == 20  # every good append landed, no bad one did
    growth_kib = rss_kib(proc.pid) - baseline_kib
    assert growth_kib < 8 * 1024, f"the daemon grew {growth_kib} KiB over 800 bad frames"
    assert proc.poll() is None
