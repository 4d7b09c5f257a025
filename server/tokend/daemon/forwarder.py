"""`tokend lsp`: the stdio process an editor spawns; it relays bytes to the user's daemon.

    --remote=auto        the user's default daemon, started if absent (the default)
    --remote=auto;NAME   a separately named daemon, started if absent
    --remote=unix;PATH   an existing daemon socket (never started)

Bytes are copied unchanged both ways (stdin -> socket, socket -> stdout) by two threads. When
the editor closes stdin the socket's write side is shut down and replies still in flight are
delivered until the daemon closes; when the daemon closes the connection (after `exit`) the
forwarder exits. Exit code 0 on a clean close, 1 if the daemon could not be reached or the
connection was cut. Messages go to stderr; stdout carries only the daemon's bytes.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from tokend.daemon.paths import UnsafePathError, check_daemon_name
from tokend.daemon.spawn import (
    CONNECT_TIMEOUT_SECONDS,
    DaemonUnavailable,
    connect_or_spawn,
    connect_unix,
)

CHUNK_BYTES = 64 << 10
DRAIN_SECONDS = 5.0  # after stdin closes, how long replies may still arrive


def parse_remote(remote: str) -> tuple[str, str | None]:
    """("auto", NAME or None) or ("unix", PATH) from a --remote value."""
    kind, _, rest = remote.partition(";")
    if kind == "auto":
        return "auto", check_daemon_name(rest) if rest else None
    if kind == "unix" and rest:
        return "unix", rest
    raise ValueError(f"--remote={remote}: expected auto, auto;NAME or unix;PATH")


def forward(
    remote: str = "auto",
    *,
    command: Sequence[str] | None = None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    timeout: float = CONNECT_TIMEOUT_SECONDS,
) -> int:
    """Connect to (or start) the daemon and relay stdio until either side closes."""
    try:
        kind, target = parse_remote(remote)
        if kind == "unix":
            assert target is not None
            sock = connect_unix(Path(target).expanduser(), timeout)
        else:
            sock = connect_or_spawn(target, command=command, timeout=timeout)
    except (DaemonUnavailable, UnsafePathError, ValueError, OSError) as exc:
        sys.stderr.write(f"tokend lsp: cannot reach the daemon: {exc}\n")
        return 1
    try:
        return relay(sock, stdin_fd, stdout_fd)
    finally:
        sock.close()


def relay(
    sock: socket.socket, stdin_fd: int, stdout_fd: int, drain_seconds: float = DRAIN_SECONDS
) -> int:
    """Copy stdin -> sock and sock -> stdout; returns 0 on a clean close, 1 if cut."""
    finished = threading.Event()
    cut: list[bool] = []

    def upstream() -> None:
        try:
            while chunk := os.read(stdin_fd, CHUNK_BYTES):
                sock.sendall(chunk)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the daemon side is gone; downstream reports how
        finished.wait(drain_seconds)
        finished.set()

    def downstream() -> None:
        try:
            while chunk := sock.recv(CHUNK_BYTES):
                _write_all(stdout_fd, chunk)
        except BrokenPipeError:
            pass  # the editor is gone
        except OSError:
            cut.append(True)
        finished.set()

    for target in (upstream, downstream):
        threading.Thread(target=target, name=target.__name__, daemon=True).start()
    finished.wait()
    return 1 if cut else 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def main(argv: list[str] | None = None) -> int:
    """`python -m tokend.daemon.forwarder [--remote=SPEC]` (what `tokend lsp` runs)."""
    import argparse

    parser = argparse.ArgumentParser(prog="tokend lsp")
    parser.add_argument("--remote", default="auto", help="auto, auto;NAME or unix;PATH")
    return forward(parser.parse_args(argv).remote)


if __name__ == "__main__":
    sys.exit(main())
