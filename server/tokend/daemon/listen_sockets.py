"""The daemon's listening sockets (listener.py's Daemon holds one ListenSockets).

A unix socket is bound under an flock on `<socket>.lock` (paths.bind_unix_socket), held until
the process is done with it (release_locks): a new daemon never binds beside this one. Released
listeners remove their socket file only if it is still theirs (same inode). At the idle
deadline the socket files are moved aside (lifetime.py) while the backlog is looked at.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokend.daemon.conn import PeerKind
from tokend.daemon.endpoints import ListenAddress
from tokend.daemon.lifetime import HiddenSocket, backlog_pending, hide_socket
from tokend.daemon.paths import bind_unix_socket

log = logging.getLogger(__name__)

ClientHandler = Callable[..., Any]


class ListenSockets:
    """The listeners bound so far, their unix socket files and the locks on their paths."""

    def __init__(self) -> None:
        self._servers: list[asyncio.Server] = []
        self._unix_sockets: list[tuple[Path, int, int]] = []  # path, inode, lock fd
        self._lock_fds: list[int] = []  # held until the process is done (release_locks)

    async def bind(
        self, address: ListenAddress, handler: Callable[[PeerKind], ClientHandler]
    ) -> str:
        """Listen on `address`, each client served by `handler(peer)`; its address (TCP with
        the real port)."""
        if address.kind == "unix":
            assert address.path is not None
            sock, lock_fd = bind_unix_socket(address.path)
            self._unix_sockets.append((address.path, os.stat(address.path).st_ino, lock_fd))
            server = await asyncio.start_unix_server(handler("unix"), sock=sock)
            self._servers.append(server)
            log.info("listening on %s", address)
            return str(address)
        server = await asyncio.start_server(handler("tcp"), address.host, address.port)
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        bound = ListenAddress("tcp", host=address.host, port=port)
        log.info("listening on %s (clients must send authToken)", bound)
        return str(bound)

    def release(self) -> None:
        """Take no new client: remove our socket files, close the listeners (the path locks
        are kept until release_locks)."""
        for path, inode, lock_fd in self._unix_sockets:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_ino == inode:
                    path.unlink()
            self._lock_fds.append(lock_fd)
        self._unix_sockets.clear()
        for server in self._servers:
            server.close()
        self._servers.clear()

    def release_locks(self) -> None:
        """Let a new daemon bind the socket paths: called once this one has stopped."""
        for lock_fd in self._lock_fds:
            with contextlib.suppress(OSError):
                os.close(lock_fd)
        self._lock_fds.clear()

    def hide(self) -> list[HiddenSocket]:
        """Move our socket files aside, so that new clients start a new daemon."""
        return [hide_socket(path, inode) for path, inode, _ in self._unix_sockets]

    def backlog_pending(self) -> bool:
        """True if a listener has a connection waiting to be accepted."""
        return backlog_pending(self._servers)
