"""One damaged page in the SQLite store (the real `tokend serve`, a real file): found at start
and reported (log, stderr, window/logMessage); the sessions that can be read are served; what
needs a damaged page (a session's messages, read when first needed) answers StoreError; no
connection is closed without a reply."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.conftest import Runtime
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.core.errors import StoreError
from tokend.daemon import paths

PAGE = 4096  # SQLite's default page size, tokend's too


def _append(client: LspClient, session_id: str, text: str) -> dict:
    message = {"role": "user", "parts": [{"type": "text", "text": text}]}
    return client.request("session/append", {"sessionId": session_id, "message": message})


def _sessions(daemons: Daemons) -> dict[str, str]:
    daemons.serve("--idle-timeout", "0")
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("before")
    ids = {}
    for name in ("healthy", "damaged"):
        created = client.request("session/create", {"model": "gpt-4o", "title": name})
        ids[name] = created["result"]["sessionId"]
        for _ in range(30):  # each message fills most of a page of its own
            assert "result" in _append(client, ids[name], f"{name.upper()}-TEXT " * 200)
    client.close()
    daemon = daemons.processes[-1]
    daemon.send_signal(signal.SIGTERM)  # a clean stop: the WAL is checkpointed into the file
    assert daemon.wait(timeout=30) == 0
    return ids


def _damage_one_page(database: Path, marker: bytes) -> None:
    data = bytearray(database.read_bytes())
    pages = [n for n in range(len(data) // PAGE) if marker in data[n * PAGE : (n + 1) * PAGE]]
    assert len(pages) > 10, "the damaged session's text should fill pages of its own"
    victim = pages[len(pages) // 2]
    data[victim * PAGE : (victim + 1) * PAGE] = b"\xa5" * PAGE
    database.write_bytes(data)


def test_one_damaged_page_is_reported_and_healthy_sessions_are_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        ids = _sessions(daemons)
        _damage_one_page(daemons.base / "tokend.sqlite3", b"DAMAGED-TEXT")

        stderr = daemons.serve("--idle-timeout", "0").read_text()
        assert "is damaged" in stderr and "quick_check" in stderr, stderr
        assert "is damaged" in daemons.log_text()

        client = LspClient.unix(paths.socket_path())
        assert "result" in client.initialize("after")
        # Told as soon as it is connected (the notification follows initialize's reply).
        told = client.request("session/list", {"all": True})
        assert "result" in told
        messages = [
            n["params"]["message"]
            for n in client.notifications
            if n.get("method") == "window/logMessage"
        ]
        assert any("is damaged" in m and ".recover" in m for m in messages), messages

        healthy = client.request("session/attach", {"sessionId": ids["healthy"]})
        assert healthy["result"]["usedTokens"] > 0
        assert _append(client, ids["healthy"], "still here")["result"]["version"] == 31

        # The damaged session's gauge comes from its row (a restart reads no message body):
        # what needs its messages answers StoreError with the way out.
        assemble = {"sessionId": ids["damaged"], "format": "openai"}
        for reply in (
            client.request("session/attach", {"sessionId": ids["damaged"]}),
            client.request("context/assemble", assemble),
        ):
            if "result" in reply:  # the attach, served from the row
                continue
            error = reply["error"]
            assert error["code"] == StoreError.code
            assert "damaged" in error["message"] and ".recover" in error["message"]
            assert "traceback" not in (error.get("data") or {})
        assert "error" in reply, "reading the damaged messages must fail"

        # The connection lives on, and a new one is served too.
        assert "result" in client.request("session/attach", {"sessionId": ids["healthy"]})
        other = LspClient.unix(paths.socket_path())
        assert "result" in other.initialize("another editor")
        assert "result" in other.request("session/list", {"all": True})


def test_a_connection_whose_server_cannot_be_built_gets_an_error_not_a_hangup(
    runtime: Runtime,
) -> None:
    """The daemon's listener and dispatcher (real sockets): building the server failed, as a
    damaged store made tokend's fail, and the connection was closed with nothing sent."""
    runtime.start_daemon(extra_args=("--failed-builds", "3"))
    client = LspClient.unix(runtime.socket_path())
    refused = client.request("initialize", {"processId": None, "capabilities": {}})
    assert refused["error"]["code"] == StoreError.code
    assert "malformed" in refused["error"]["message"]
    client.notify("initialized", {})  # a notification: no reply, and the connection stays
    assert client.request("initialize", {"processId": None, "capabilities": {}})["error"]
    served = client.request("initialize", {"processId": None, "capabilities": {}})
    assert "result" in served, served


def test_standalone_reports_the_damage_and_serves_the_healthy_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        ids = _sessions(daemons)
        _damage_one_page(daemons.base / "tokend.sqlite3", b"DAMAGED-TEXT")
        stderr_file = daemons.base / "standalone.err"
        with open(stderr_file, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend", "lsp", "--standalone"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=daemons.base,
            )
        daemons.processes.append(proc)
        client = LspClient.process(proc)
        assert "result" in client.initialize("standalone")
        assert "is damaged (SQLite's quick_check" in stderr_file.read_text()
        assert "result" in client.request("session/attach", {"sessionId": ids["healthy"]})
        assert "result" in client.request("session/attach", {"sessionId": ids["damaged"]})
        assemble = {"sessionId": ids["damaged"], "format": "openai"}
        damaged = client.request("context/assemble", assemble)  # its messages are read here
        assert damaged["error"]["code"] == StoreError.code
        assert "damaged" in damaged["error"]["message"]
