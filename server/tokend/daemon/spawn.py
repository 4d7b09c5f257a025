"""Starting the user's daemon on demand: exactly one, even when five editors start at once.

A forwarder that finds no daemon takes an exclusive flock on `spawn.lock`, looks again, and
only then starts `python -m tokend serve --listen unix:PATH` detached (its own session, stdio
to /dev/null, stderr to a file next to the log), and waits for the socket to answer. Forwarders
waiting on the lock find the new daemon when they get it.

A detached daemon (TOKEND_DETACHED=1 in its environment) logs to its rotated log file only; its
stderr file (`<socket name>.stderr`, mode 0600, emptied at each start) receives only what a dying
process writes there: a Python fatal error, faulthandler's traceback, an uncaught exception.

Tests point this at a test daemon with the TOKEND_DAEMON_CMD environment variable (a shell-style
command line; `--listen unix:PATH` is appended) or the `command` parameter.

This module imports neither pygls nor asyncio: `tokend lsp` must start fast.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from tokend.adapters.rendezvous import connect_unix
from tokend.daemon.paths import log_dir, socket_path, spawn_lock_path

ENV_DAEMON_CMD = "TOKEND_DAEMON_CMD"
ENV_DETACHED = "TOKEND_DETACHED"
CONNECT_TIMEOUT_SECONDS = 10.0
_NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError)


class DaemonUnavailable(RuntimeError):
    """The daemon could not be reached or started; the message says where to look."""


def is_detached() -> bool:
    """True in a daemon that spawn_daemon started: its stderr is a crash file, not a terminal."""
    return os.environ.get(ENV_DETACHED) == "1"


def stderr_path(sock: Path) -> Path:
    """Where a spawned daemon's stderr goes (crashes only)."""
    return log_dir() / f"{sock.stem}.stderr"


def daemon_command(sock: Path, command: Sequence[str] | None = None) -> list[str]:
    """The command line that starts a daemon on `sock` (default: `python -m tokend serve`)."""
    if command is None:
        override = os.environ.get(ENV_DAEMON_CMD)
        command = shlex.split(override) if override else [sys.executable, "-m", "tokend", "serve"]
    return [*command, "--listen", f"unix:{sock}"]


def connect_or_spawn(
    name: str | None = None,
    *,
    command: Sequence[str] | None = None,
    timeout: float = CONNECT_TIMEOUT_SECONDS,
) -> socket.socket:
    """A connected socket to the user's daemon (named `name`), starting it if needed."""
    path = socket_path(name)
    with contextlib.suppress(*_NOT_LISTENING):
        return connect_unix(path)
    deadline = time.monotonic() + timeout
    lock_fd = os.open(spawn_lock_path(name), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        _flock_until(lock_fd, deadline)
        with contextlib.suppress(*_NOT_LISTENING):
            return connect_unix(path)  # another forwarder started it while we waited
        process = spawn_daemon(path, command)
        return _connect_when_ready(path, process, deadline)
    finally:
        os.close(lock_fd)  # releases the flock


def spawn_daemon(sock: Path, command: Sequence[str] | None = None) -> subprocess.Popen[bytes]:
    """Start a detached daemon on `sock`; it outlives this process and its terminal."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    stderr_fd = os.open(stderr_path(sock), flags, 0o600)
    try:
        os.fchmod(stderr_fd, 0o600)  # a file an older tokend created with the umask's mode
        process = subprocess.Popen(
            daemon_command(sock, command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr_fd,
            start_new_session=True,
            close_fds=True,
            env={**os.environ, ENV_DETACHED: "1"},
        )
    finally:
        os.close(stderr_fd)
    # Reap it if it exits while we live, so it never lingers as a zombie.
    threading.Thread(target=process.wait, name="reap-daemon", daemon=True).start()
    return process


def _flock_until(lock_fd: int, deadline: float) -> None:
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise DaemonUnavailable(
                    "timed out waiting for another tokend to start the daemon"
                ) from None
            time.sleep(0.02)


def _connect_when_ready(
    path: Path, process: subprocess.Popen[bytes], deadline: float
) -> socket.socket:
    delay = 0.01
    while True:
        try:
            return connect_unix(path)
        except _NOT_LISTENING:
            pass
        exit_code = process.poll()
        if exit_code is not None and not path.exists():
            raise DaemonUnavailable(
                f"the daemon exited with code {exit_code} before listening; "
                f"see {stderr_path(path)} and the daemon log in {log_dir()}"
            )
        if time.monotonic() > deadline:
            raise DaemonUnavailable(f"the daemon did not listen on {path} in time; see {log_dir()}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
