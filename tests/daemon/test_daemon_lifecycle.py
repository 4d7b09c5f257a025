"""The daemon's life: idle exit, stale sockets, one daemon per user, TCP auth, garbage input."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tests.daemon.abuse import discard_until_closed, malformed_frames, rss_kib
from tests.daemon.conftest import Runtime
from tests.lsp_client import ConnectionClosed, LspClient

UNAUTHORIZED = -33007


def test_idle_daemon_exits_and_removes_its_socket(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon(idle_timeout=0.5)
    client = LspClient.unix(runtime.socket_path())
    assert "result" in client.initialize("cli")
    client.close()
    assert daemon.wait(timeout=10) == 0
    assert not runtime.socket_path().exists()


def test_work_in_flight_keeps_an_idle_daemon_alive(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon(idle_timeout=0.2)
    client = LspClient.unix(runtime.socket_path())
    client.initialize("agent")
    client.send({"jsonrpc": "2.0", "id": 99, "method": "test/busy", "params": {"seconds": 1.5}})
    time.sleep(0.1)
    client.close()  # the agent leaves while its compaction is still running
    time.sleep(0.8)  # well past the idle timeout
    assert daemon.poll() is None
    assert runtime.socket_path().exists()
    assert daemon.wait(timeout=10) == 0  # once the work is done, it goes
    assert not runtime.socket_path().exists()


def test_a_stale_socket_from_a_crashed_daemon_is_replaced(runtime: Runtime) -> None:
    path = runtime.socket_path()
    abandoned = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abandoned.bind(str(path))  # bound, never listening, then the "daemon" died
    abandoned.close()
    assert path.exists()

    editor = LspClient.process(runtime.start_forwarder())
    assert "result" in editor.initialize("editor")
    assert editor.request("test/echo", "hi")["result"]["echo"] == "hi"
    assert len(runtime.daemon_pids()) == 1


def test_a_live_daemon_is_never_replaced(runtime: Runtime) -> None:
    first, _, _ = runtime.start_daemon()
    inode = os.stat(runtime.socket_path()).st_ino
    second, _, second_stderr = runtime.start_daemon(wait_ready=False)
    assert second.wait(timeout=15) == 1
    assert "already running" in second_stderr.read_text()

    assert os.stat(runtime.socket_path()).st_ino == inode
    client = LspClient.unix(runtime.socket_path())
    client.initialize("cli")
    assert client.request("test/status")["result"]["pid"] == first.pid


def test_five_editors_starting_at_once_make_exactly_one_daemon(runtime: Runtime) -> None:
    forwarders = [runtime.start_forwarder() for _ in range(5)]

    def daemon_pid(proc: subprocess.Popen[bytes]) -> int:
        client = LspClient.process(proc)
        client.initialize(f"editor-{proc.pid}")
        return client.request("test/status", timeout=20)["result"]["pid"]

    with ThreadPoolExecutor(5) as pool:
        pids = set(pool.map(daemon_pid, forwarders))
    assert len(pids) == 1
    assert runtime.daemon_pids() == pids


def test_tcp_needs_the_token_from_the_token_file(runtime: Runtime) -> None:
    _, addresses, _ = runtime.start_daemon(f"unix:{runtime.socket_path()}", "tcp:127.0.0.1:0")
    port = int(next(a for a in addresses if a.startswith("tcp:")).rsplit(":", 1)[1])
    token_file = runtime.socket_path().parent / "token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    token = token_file.read_text().strip()

    for options in ({}, {"authToken": "wrong"}, {"authToken": token[:-1]}):
        client = LspClient.tcp("127.0.0.1", port)
        reply = client.initialize("intruder", options)
        assert reply["error"]["code"] == UNAUTHORIZED
        assert client.wait_closed()

    sneaky = LspClient.tcp("127.0.0.1", port)  # a method before initialize never runs
    assert sneaky.request("test/broadcast", "spam")["error"]["code"] == UNAUTHORIZED
    assert sneaky.wait_closed()

    client = LspClient.tcp("127.0.0.1", port)
    assert "result" in client.initialize("remote-tool", {"authToken": token})
    assert client.request("test/echo", "ok")["result"]["echo"] == "ok"
    status = client.request("test/status")["result"]
    assert [c["clientName"] for c in status["connections"]] == ["remote-tool"]


def test_a_tcp_listener_on_a_public_address_is_refused(runtime: Runtime) -> None:
    daemon, _, stderr = runtime.start_daemon("tcp:0.0.0.0:0", wait_ready=False)
    assert daemon.wait(timeout=15) == 1
    assert "127.0.0.1 or ::1" in stderr.read_text()


def test_malformed_frames_on_one_connection_disturb_no_other(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon()
    good = LspClient.unix(runtime.socket_path())
    good.initialize("good")

    def open_bad() -> socket.socket:
        bad = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        bad.connect(str(runtime.socket_path()))
        threading.Thread(target=discard_until_closed, args=(bad,), daemon=True).start()
        return bad

    bad = open_bad()
    kinds = malformed_frames()
    baseline_kib = 0
    for sent in range(1000):
        try:
            bad.sendall(kinds[sent % len(kinds)])
            if sent % 250 == 249:  # a frame too large to accept: the daemon drops this client
                bad.sendall(b"Content-Length: 999999999999\r\n\r\n")
        except OSError:
            bad.close()
            bad = open_bad()
        if sent % 50 == 0:
            assert good.request("test/echo", sent)["result"]["echo"] == sent
        if sent == 200:
            baseline_kib = rss_kib(daemon.pid)
    assert good.request("test/echo", "after")["result"]["echo"] == "after"
    growth_kib = rss_kib(daemon.pid) - baseline_kib
    assert growth_kib < 4 * 1024, f"daemon RSS grew {growth_kib} KiB over 800 malformed frames"

    fresh = LspClient.unix(runtime.socket_path())  # and the daemon still takes new clients
    assert "result" in fresh.initialize("fresh")
    assert daemon.poll() is None


def test_a_garbage_body_gets_a_parse_error_and_the_connection_lives_on(runtime: Runtime) -> None:
    runtime.start_daemon()
    client = LspClient.unix(runtime.socket_path())
    client.initialize("cli")
    client.send_raw(b"Content-Length: 9\r\n\r\n{not json")
    assert client.read_message()["error"]["code"] == -32700
    try:
        assert client.request("test/echo", 1)["result"]["echo"] == 1
    except ConnectionClosed as exc:
        raise AssertionError("the daemon closed the connection after one bad body") from exc


def test_sigterm_stops_the_daemon_and_removes_its_socket(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon()
    client = LspClient.unix(runtime.socket_path())
    client.initialize("cli")
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=10) == 0
    assert client.wait_closed()
    assert not runtime.socket_path().exists()


def test_the_next_editor_replaces_a_daemon_that_was_killed(runtime: Runtime) -> None:
    first = LspClient.process(runtime.start_forwarder())
    first.initialize("editor-1")
    crashed_pid = first.request("test/status")["result"]["pid"]
    os.kill(crashed_pid, signal.SIGKILL)
    assert first.wait_closed()
    assert runtime.socket_path().exists()  # left behind by the killed daemon

    second = LspClient.process(runtime.start_forwarder())
    assert "result" in second.initialize("editor-2")
    new_pid = second.request("test/status")["result"]["pid"]
    assert new_pid != crashed_pid
    assert runtime.daemon_pids() == {new_pid}
