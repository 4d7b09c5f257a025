"""tokend inside the test's process: the wire tier of the test pyramid.

- `InProcessClient.start(cwd=..., env=...)` (asyncio) and `Standalone.start(...)` (blocking) are
  `ProcessClient.spawn("lsp", "--standalone", ...)` without the process: the same
  `serve_standalone` the process runs once it has parsed its arguments (the real app on a real
  SQLite file, the real handlers, pygls's framing) on a thread, over a socket pair instead of
  stdio pipes; the clients are tests/lsp_client.py's.
- `tokend_cli(*args, cwd=..., env=...)` is `subprocess.run([python, -m, tokend, *args])` without
  the process: `tokend.cli.main`.

What only a process shows (the command line, the interpreter's start, stdio pipes, the exit
status the shell sees, a kill, the daemon's socket and frame reader) keeps its process tests:
tests/e2e/test_daemon_standalone_exit.py, test_daemon_stdio_server.py's first test, test_protocol_pytest_lsp.py,
test_protocol_lsp_conformance.py, test_cli.py's first test, and tests/daemon/.

`env` is applied to this process's environment while the server (or command) runs, as the
process would have inherited it, and put back after; tests run one after the other in a worker.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from tests.lsp_client import ConnectionClosed, LspClient, RpcClient
from tokend.commands.serve import serve_standalone

STOP_SECONDS = 30.0  # for the server's thread to end (app.close bounds its background work)
_running: list[Hosted] = []  # stopped by tests/conftest.py if a test did not
STARTS = [0]  # servers and commands run in this process (tests/tiers.py reads it)


class Hosted:
    """The standalone server on a thread of this process; `sock` is the client's end."""

    def __init__(self, cwd: Path, env: Mapping[str, str] | None, database_url: str | None) -> None:
        STARTS[0] += 1
        if env is not None and any(h.restore for h in _running):
            changed = {k for k in set(os.environ) | set(env) if os.environ.get(k) != env.get(k)}
            assert not changed, f"in-process servers at once need one environment; {changed} differ"
        self.restore = _apply(env) if env is not None else {}
        self.sock, theirs = socket.socketpair()
        self.outcome: list[BaseException | int] = []
        self.thread = threading.Thread(
            target=_serve, args=(Path(cwd), database_url, theirs, self.outcome), daemon=True
        )
        self.thread.start()
        _running.append(self)

    def end_input(self) -> None:
        """As a closed stdin: the server reads the end of its input."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server has closed its end, or the client its own (the same end)

    def finish(self) -> int:
        """The server's exit status, once its thread has ended; the environment put back."""
        if self in _running:
            _running.remove(self)
            _restore(self.restore)
        assert not self.thread.is_alive(), "the in-process server did not stop"
        [outcome] = self.outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class InProcessClient(RpcClient):
    """The asyncio face (tests/lsp_client.py's RpcClient)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hosted: Hosted
    ) -> None:
        super().__init__(reader, writer)
        self.hosted = hosted

    @classmethod
    async def start(
        cls, cwd: Path, env: Mapping[str, str] | None = None, database_url: str | None = None
    ) -> InProcessClient:
        hosted = Hosted(cwd, env, database_url)
        reader, writer = await asyncio.open_unix_connection(sock=hosted.sock)
        return cls(reader, writer, hosted)

    async def shutdown(self) -> int:
        """`shutdown`, `exit`, then the server's exit status (as the process's)."""
        try:
            await self.request("shutdown", None, timeout=10)
            self.notify("exit")
            await asyncio.to_thread(self.hosted.thread.join, STOP_SECONDS)
        finally:
            code = await self.stop()
        return code

    async def stop(self) -> int:
        """End the input unless the server has ended; its exit status."""
        if self.hosted.thread.is_alive():
            self.hosted.end_input()
            await asyncio.to_thread(self.hosted.thread.join, STOP_SECONDS)
        self._task.cancel()
        self.writer.close()
        return self.hosted.finish()


class Standalone(LspClient):
    """The blocking face (tests/lsp_client.py's LspClient)."""

    def __init__(self, hosted: Hosted) -> None:
        super().__init__(hosted.sock.fileno(), hosted.sock.fileno(), hosted.sock)
        self.hosted = hosted

    @classmethod
    def start(
        cls, cwd: Path, env: Mapping[str, str] | None = None, database_url: str | None = None
    ) -> Standalone:
        return cls(Hosted(cwd, env, database_url))

    def stop(self) -> int:
        """`shutdown` and `exit` (when the server still runs), then its exit status."""
        if self.hosted.thread.is_alive() and self.hosted.sock.fileno() != -1:  # not closed
            try:
                self.request("shutdown", timeout=10)
                self.notify("exit")
            except (ConnectionClosed, OSError, TimeoutError):
                pass  # it is ending: what matters is that it does, below
            self.hosted.thread.join(STOP_SECONDS)
        if self.hosted.thread.is_alive():
            self.hosted.end_input()
            self.hosted.thread.join(STOP_SECONDS)
        try:
            return self.hosted.finish()
        finally:
            self.close()


def stop_all() -> None:
    """Stop servers a test left running (it failed before stopping them)."""
    for hosted in list(_running):
        hosted.end_input()
        hosted.thread.join(STOP_SECONDS)
        _running.remove(hosted)
        _restore(hosted.restore)


def _serve(
    cwd: Path, database_url: str | None, sock: socket.socket, outcome: list[BaseException | int]
) -> None:
    stdin, stdout = sock.makefile("rb"), sock.makefile("wb")
    try:
        outcome.append(serve_standalone(cwd, database_url, stdin, stdout))
    except BaseException as exc:  # shown by the test's shutdown
        outcome.append(exc)
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # the client reads the end, as of an exited process
        except OSError:
            pass
        sock.close()


def _apply(env: Mapping[str, str]) -> dict[str, str | None]:
    """Make os.environ `env`; what to put back."""
    restore: dict[str, str | None] = {}
    for key in set(os.environ) | set(env):
        if os.environ.get(key) != env.get(key):
            restore[key] = os.environ.get(key)
            if key in env:
                os.environ[key] = env[key]
            else:
                del os.environ[key]
    return restore


def _restore(restore: dict[str, str | None]) -> None:
    for key, value in restore.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def tokend_cli(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`tokend ARGS` run by `tokend.cli.main` in this process, as `subprocess.run([python, -m,
    tokend, *ARGS], cwd=cwd, env=env, input=stdin, capture_output=True, text=True)` would: the
    folder, the environment, stdin, stdout and stderr are this call's while it runs. What only
    a process shows (the interpreter's start, the exit status the shell sees) keeps its
    process tests (tests/e2e/test_cli.py's first tests)."""
    from tokend.cli import main

    STARTS[0] += 1
    restore = _apply(env) if env is not None else {}
    before = Path.cwd()
    streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
    os.chdir(cwd)
    outcome: list[BaseException | int] = []

    def run() -> None:  # on a thread of its own: a command may run an event loop of its own
        try:
            outcome.append(main(list(args)))
        except SystemExit as exc:  # argparse's usage errors, --help, --version
            outcome.append(exc.code if isinstance(exc.code, int) else int(exc.code is not None))
        except BaseException as exc:  # what the process would have died of: raised below
            outcome.append(exc)

    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    finally:
        os.chdir(before)
        sys.stdin, sys.stdout, sys.stderr = streams
        _restore(restore)
    [code] = outcome
    if isinstance(code, BaseException):
        raise code
    command = [sys.executable, "-m", "tokend", *args]
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())
