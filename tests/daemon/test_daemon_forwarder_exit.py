"""`tokend lsp` tells the editor how its daemon went: exit 0 only on a normal close; 2 with one
line on stderr (what happened, how to restart) when the daemon went away under it.

Found: SIGTERM, kill -9 while idle and kill -9 during a request all ended `tokend lsp` with exit
code 0 and no message, so an editor could not tell a crash from a normal close.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.daemon.conftest import Runtime
from tests.lsp_client import LspClient

LOST = 2


def _editor(runtime: Runtime) -> tuple[subprocess.Popen[bytes], LspClient, int]:
    """`tokend lsp` on the runtime's daemon, initialized; (process, client, daemon pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokend.daemon.forwarder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    runtime.processes.append(proc)
    client = LspClient.process(proc)
    assert "result" in client.initialize("editor")
    return proc, client, client.request("test/status")["result"]["pid"]


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int, list[str]]:
    code = proc.wait(timeout=20)
    assert proc.stderr is not None
    return code, proc.stderr.read().decode().splitlines()


def test_a_normal_close_exits_0_and_says_nothing(runtime: Runtime) -> None:
    runtime.start_daemon()
    proc, client, _ = _editor(runtime)
    client.request("shutdown")
    client.notify("exit")
    assert _ended(proc) == (0, [])

    proc, client, _ = _editor(runtime)
    client.close()  # the editor closes stdin without a word
    assert _ended(proc) == (0, [])


def test_a_daemon_stopped_with_sigterm(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon()
    proc, _, pid = _editor(runtime)
    daemon.send_signal(signal.SIGTERM)
    code, lines = _ended(proc)
    assert code == LOST and len(lines) == 1, lines
    assert f"daemon (pid {pid}) was stopped" in lines[0] and "restart" in lines[0]


def test_a_daemon_killed_while_idle(runtime: Runtime) -> None:
    runtime.start_daemon()
    proc, _, pid = _editor(runtime)
    os.kill(pid, signal.SIGKILL)
    code, lines = _ended(proc)
    assert code == LOST and len(lines) == 1, lines
    assert f"daemon (pid {pid}) died (killed or crashed" in lines[0] and "restart" in lines[0]


def test_a_daemon_killed_during_a_request(runtime: Runtime) -> None:
    runtime.start_daemon()
    proc, client, pid = _editor(runtime)
    work = {"seconds": 30, "path": str(runtime.base / "never"), "line": "x"}
    client.send({"jsonrpc": "2.0", "id": 50, "method": "test/work", "params": work})
    client.request("test/echo", "the work request was read")
    os.kill(pid, signal.SIGKILL)
    code, lines = _ended(proc)
    assert code == LOST and len(lines) == 1, lines
    assert f"daemon (pid {pid}) died" in lines[0] and "restart" in lines[0]


def test_a_daemon_that_closes_the_connection_but_lives(runtime: Runtime) -> None:
    daemon, _, _ = runtime.start_daemon()
    proc, client, pid = _editor(runtime)
    client.send_raw(b"this is not a header\r\n\r\n")  # broken framing: the daemon hangs up
    code, lines = _ended(proc)
    assert code == LOST and len(lines) == 1, lines
    assert f"daemon (pid {pid}) closed this connection" in lines[0]
    assert daemon.poll() is None


def test_exit_without_shutdown_exits_1(runtime: Runtime) -> None:
    """The LSP specification: `exit` before any `shutdown` ends the server with code 1."""
    runtime.start_daemon()
    proc, client, _ = _editor(runtime)
    client.notify("exit")
    assert _ended(proc) == (1, [])
