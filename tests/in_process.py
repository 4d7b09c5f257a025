"""`tokend lsp --standalone` inside the test's process: the wire tier of the test pyramid.

`InProcessClient.start(cwd=..., env=...)` is `ProcessClient.spawn("lsp", "--standalone", ...)`
without the process: the same `serve_standalone` the process runs once it has parsed its
arguments (the real app on a real SQLite file, the real handlers, pygls's framing) on a thread,
over a socket pair instead of stdio pipes; the client is tests/lsp_client.py's. What only a
process shows (the command line, stdio pipes, the exit status the shell sees, a kill) keeps its
process tests: tests/e2e/test_standalone_exit.py, test_stdio_server.py, test_pytest_lsp.py.

`env` is applied to this process's environment while the server runs (as the process would
have inherited it) and restored when it stops; tests run one after the other in a worker.
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

from tests.lsp_client import RpcClient
from tokend.commands.serve import serve_standalone

STOP_SECONDS = 30.0  # for the server's thread to end (app.close bounds its background work)
_running: list[InProcessClient] = []  # stopped by tests/conftest.py if a test did not


class InProcessClient(RpcClient):
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        sock: socket.socket,
        thread: threading.Thread,
        outcome: list[BaseException | int],
        restore: dict[str, str | None],
    ) -> None:
        super().__init__(reader, writer)
        self._sock = sock
        self._thread = thread
        self._outcome = outcome
        self._restore = restore

    @classmethod
    async def start(
        cls, cwd: Path, env: Mapping[str, str] | None = None, database_url: str | None = None
    ) -> InProcessClient:
        restore = _apply(env) if env is not None else {}
        ours, theirs = socket.socketpair()
        outcome: list[BaseException | int] = []
        thread = threading.Thread(
            target=_serve, args=(Path(cwd), database_url, theirs, outcome), daemon=True
        )
        thread.start()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        client = cls(reader, writer, ours, thread, outcome, restore)
        _running.append(client)
        return client

    async def shutdown(self) -> int:
        """`shutdown`, `exit`, then the server's exit status (as the process's)."""
        try:
            await self.request("shutdown", None, timeout=10)
            self.notify("exit")
            await asyncio.to_thread(self._thread.join, STOP_SECONDS)
        finally:
            code = await self.stop()
        return code

    async def stop(self) -> int:
        """End the input (as a closed stdin) unless the server has ended; its exit status."""
        if self._thread.is_alive():
            _end_input(self)
            await asyncio.to_thread(self._thread.join, STOP_SECONDS)
        return self._finish()

    def _finish(self) -> int:
        if self in _running:
            _running.remove(self)
            self._task.cancel()
            self.writer.close()
            _restore(self._restore)
        assert not self._thread.is_alive(), "the in-process server did not stop"
        [outcome] = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def stop_all() -> None:
    """Stop servers a test left running (it failed before its shutdown)."""
    for client in list(_running):
        _end_input(client)
        client._thread.join(STOP_SECONDS)
        _running.remove(client)
        _restore(client._restore)


def _end_input(client: InProcessClient) -> None:
    try:
        client._sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server has closed its end


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

    restore = _apply(env) if env is not None else {}
    before = Path.cwd()
    streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
    os.chdir(cwd)
    try:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, --help, --version
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(before)
        sys.stdin, sys.stdout, sys.stderr = streams
        _restore(restore)
    command = [sys.executable, "-m", "tokend", *args]
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())
