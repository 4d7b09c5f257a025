"""`tokend lsp`: the stdio process an editor spawns; it relays bytes to the user's daemon.

    --remote=auto        the user's default daemon, started if absent (the default)
    --remote=auto;NAME   a separately named daemon, started if absent
    --remote=unix;PATH   an existing daemon socket (never started)

Bytes are copied unchanged both ways (stdin -> socket, socket -> stdout) by two threads. When
the editor closes stdin the socket's write side is shut down and replies still in flight are
delivered until the daemon closes; when the daemon closes the connection after `exit` the
forwarder exits. Messages go to stderr; stdout carries only the daemon's bytes.

Exit codes, so that an editor can tell a crash from a normal close:
    0  a normal close: the editor sent `exit` or closed stdin (or went away)
    1  the daemon could not be reached or started
    2  the daemon went away under the editor (stopped, killed, crashed, or it closed this
       connection): one line on stderr says which and how to restart
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from tokend.adapters.rendezvous import connect_unix
from tokend.daemon.exit_watch import ExitWatch, daemon_fate, peer_pid
from tokend.daemon.paths import UnsafePathError, check_daemon_name, log_dir, log_path
from tokend.daemon.spawn import (
    CONNECT_TIMEOUT_SECONDS,
    DaemonUnavailable,
    connect_or_spawn,
)

CHUNK_BYTES = 64 << 10
DRAIN_SECONDS = 5.0  # after stdin closes, how long replies may still arrive
EXIT_OK, EXIT_UNREACHABLE, EXIT_LOST = 0, 1, 2
EXIT_WITHOUT_SHUTDOWN = 1  # the LSP specification: `exit` before any `shutdown` exits 1


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
            log = log_dir()
        else:
            sock = connect_or_spawn(target, command=command, timeout=timeout)
            log = log_path(target)
    except (DaemonUnavailable, UnsafePathError, ValueError, OSError) as exc:
        sys.stderr.write(f"tokend lsp: cannot reach the daemon: {exc}\n")
        return EXIT_UNREACHABLE
    try:
        pid = peer_pid(sock)
        watch = ExitWatch()
        lost = relay(sock, stdin_fd, stdout_fd, watch=watch)
        if lost is None:
            return EXIT_WITHOUT_SHUTDOWN if watch.exit_sent and not watch.shutdown_sent else EXIT_OK
        sys.stderr.write(f"tokend lsp: {daemon_fate(pid, lost, log)}\n")
        sys.stderr.flush()
        return EXIT_LOST
    finally:
        sock.close()


def relay(
    sock: socket.socket,
    stdin_fd: int,
    stdout_fd: int,
    drain_seconds: float = DRAIN_SECONDS,
    watch: ExitWatch | None = None,
) -> str | None:
    """Copy stdin -> sock and sock -> stdout. None after a normal close; else how the
    connection was lost ("closed" or "reset"). `watch` follows the editor's messages."""
    finished = threading.Event()
    editor_done = threading.Event()  # the editor sent `exit`, closed stdin, or went away
    lost: list[str] = []
    watch = watch if watch is not None else ExitWatch()

    def upstream() -> None:
        try:
            while chunk := os.read(stdin_fd, CHUNK_BYTES):
                watch.feed(chunk)
                if watch.exit_sent:
                    editor_done.set()
                sock.sendall(chunk)
            editor_done.set()
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the daemon side is gone; downstream reports how
        finished.wait(drain_seconds)
        finished.set()

    def downstream() -> None:
        try:
            while chunk := sock.recv(CHUNK_BYTES):
                _write_all(stdout_fd, chunk)
            lost.append("closed")
        except BrokenPipeError:
            editor_done.set()  # the editor is gone
        except OSError:
            lost.append("reset")
        finished.set()

    for target in (upstream, downstream):
        threading.Thread(target=target, name=target.__name__, daemon=True).start()
    finished.wait()
    return None if editor_done.is_set() or not lost else lost[0]


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
