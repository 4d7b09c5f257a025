"""Several editors on one daemon: real daemon, forwarder and client processes, real sockets."""

from __future__ import annotations

import os
import signal
import stat
import time

from tests.daemon.conftest import Runtime
from tests.lsp_client import LspClient


def _wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _three_clients(runtime: Runtime) -> tuple[list, list[LspClient]]:
    """Two editors through `tokend lsp` (the first starts the daemon) and one direct client."""
    forwarders = [runtime.start_forwarder(), runtime.start_forwarder()]
    clients = [LspClient.process(proc) for proc in forwarders]
    for number, client in enumerate(clients, 1):
        assert "result" in client.initialize(f"editor-{number}")
    direct = LspClient.unix(runtime.socket_path())
    assert "result" in direct.initialize("cli")
    return forwarders, [*clients, direct]


def test_socket_and_runtime_dir_are_private(runtime: Runtime) -> None:
    runtime.start_daemon()
    sock = runtime.socket_path()
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    assert os.stat(sock).st_uid == os.getuid()


def test_a_broadcast_from_one_editor_reaches_the_others(runtime: Runtime) -> None:
    _, (editor_1, editor_2, cli) = _three_clients(runtime)

    status = cli.request("test/status")["result"]
    assert sorted(c["clientName"] for c in status["connections"]) == ["cli", "editor-1", "editor-2"]
    assert len(runtime.daemon_pids()) == 1

    reply = editor_1.request("test/broadcast", {"gauge": 42})
    assert reply["result"] == {"sent": 2}
    for other in (editor_2, cli):
        message = other.read_message()
        assert message["method"] == "test/broadcast"
        assert message["params"] == {"gauge": 42}


def test_exit_from_one_editor_leaves_the_others_served(runtime: Runtime) -> None:
    (forwarder_1, _), (editor_1, editor_2, cli) = _three_clients(runtime)

    assert "result" in editor_1.request("shutdown")
    editor_1.notify("exit")
    assert forwarder_1.wait(timeout=10) == 0  # the daemon closed only that connection

    assert editor_2.request("test/echo", {"n": 1})["result"]["echo"] == {"n": 1}
    assert cli.request("test/echo", {"n": 2})["result"]["echo"] == {"n": 2}
    names = [c["clientName"] for c in cli.request("test/status")["result"]["connections"]]
    assert sorted(names) == ["cli", "editor-2"]


def test_killing_a_forwarder_does_not_hurt_the_daemon(runtime: Runtime) -> None:
    (forwarder_1, _), (_, editor_2, cli) = _three_clients(runtime)
    os.kill(forwarder_1.pid, signal.SIGKILL)
    forwarder_1.wait()

    def editor_1_gone() -> bool:
        connections = cli.request("test/status")["result"]["connections"]
        return "editor-1" not in [c["clientName"] for c in connections]

    assert _wait_for(editor_1_gone)
    assert editor_2.request("test/echo", "still here")["result"]["echo"] == "still here"


def test_forwarder_exits_0_when_the_editor_closes_stdin(runtime: Runtime) -> None:
    forwarder = runtime.start_forwarder()
    editor = LspClient.process(forwarder)
    assert "result" in editor.initialize("editor")
    editor.close()
    assert forwarder.wait(timeout=10) == 0


def test_a_named_daemon_is_separate_from_the_default_one(runtime: Runtime) -> None:
    default = LspClient.process(runtime.start_forwarder("auto"))
    named = LspClient.process(runtime.start_forwarder("auto;work"))
    default.initialize("default")
    named.initialize("named")
    assert runtime.socket_path("work").name == "daemon-work.sock"
    default_pid = default.request("test/status")["result"]["pid"]
    named_status = named.request("test/status")["result"]
    assert named_status["pid"] != default_pid
    assert [c["clientName"] for c in named_status["connections"]] == ["named"]
