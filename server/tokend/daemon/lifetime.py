"""Leaving without refusing anyone: the pieces of the daemon's idle exit.

A client connects to a unix socket by its path, and its connect() succeeds as soon as the
kernel queues it in the listen backlog, before the daemon accepts it. Closing the listener at
the idle deadline would reset whoever was queued. So the daemon first moves the socket file
aside (`hide_socket`): from then on a client finds no socket and starts a new daemon (which
waits for this one's lock), and the backlog can only shrink. Once `backlog_pending` says it is
empty, the daemon either exits (`remove`) or, if someone got in, puts the file back (`restore`).
A TCP listener cannot be hidden: its backlog is drained the same way and it is closed in the
same loop step as the last check, which leaves a window of microseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
from dataclasses import dataclass
from pathlib import Path


@dataclass
class HiddenSocket:
    """A socket file moved aside; `moved_to` is None if it was not ours to move."""

    path: Path
    moved_to: Path | None

    def restore(self) -> None:
        """Put the file back (the daemon's flock on the path guarantees nobody took it)."""
        if self.moved_to is not None:
            with contextlib.suppress(OSError):
                os.rename(self.moved_to, self.path)
            self.moved_to = None

    def remove(self) -> None:
        if self.moved_to is not None:
            with contextlib.suppress(OSError):
                self.moved_to.unlink()
            self.moved_to = None


def hide_socket(path: Path, inode: int) -> HiddenSocket:
    """Move our socket file at `path` (if it is still the one with `inode`) to a hidden name."""
    hidden = path.with_name(f".{path.name}.{os.getpid()}.closing")
    try:
        if os.lstat(path).st_ino != inode:
            return HiddenSocket(path, None)
        os.rename(path, hidden)
    except OSError:
        return HiddenSocket(path, None)
    return HiddenSocket(path, hidden)


def backlog_pending(servers: list[asyncio.Server]) -> bool:
    """True if a listener has a connection waiting in its backlog (its socket is readable)."""
    sockets = [sock.fileno() for server in servers for sock in server.sockets]
    if not sockets:
        return False
    readable, _, _ = select.select(sockets, [], [], 0)
    return bool(readable)
