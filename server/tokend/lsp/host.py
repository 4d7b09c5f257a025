"""What a connection's server may ask of the process that hosts it (the daemon, or stdio), and
the host's part of daemon/status (HostStatus: the host shapes it, lsp/wire/daemon.py sends it)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class HostConnection:
    """One connection of the host: its id, its client's clientInfo.name and the session it
    follows (None until known), and how it reached the daemon (None: stdio, --standalone)."""

    id: str
    client_name: str | None
    session_id: str | None
    peer: str | None = None  # "unix" or "tcp" (daemon.conn.PeerKind)


@dataclass(frozen=True)
class HostStatus:
    """The host's part of daemon/status: its process, how long it has run, its writes and
    compactions in flight (None: --standalone does not count them) and its connections."""

    pid: int
    uptime_seconds: float
    connections: tuple[HostConnection, ...]
    busy: int | None = None


class ServerHost(Protocol):
    def status(self) -> HostStatus: ...

    def attached(self, session_id: str | None, client_name: str | None) -> None:
        """This connection now follows `session_id` (None: none)."""
        ...

    def busy(self) -> AbstractContextManager[None]:
        """Held around writes and compactions: the host does not exit while it is."""
        ...

    def notify_others(self, method: str, params: Any, session_id: str) -> None:
        """A notification to every OTHER connection attached to `session_id`."""
        ...

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the connection is gone (the client may vanish without a word)."""
        ...


class StandaloneHost:
    """The host of `tokend lsp --standalone`: one connection, this process."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._session_id: str | None = None
        self._client_name: str | None = None

    def status(self) -> HostStatus:
        return HostStatus(
            os.getpid(),
            round(time.monotonic() - self._started, 3),
            (HostConnection("stdio", self._client_name, self._session_id),),
        )

    def attached(self, session_id: str | None, client_name: str | None) -> None:
        self._session_id, self._client_name = session_id, client_name

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        yield

    def notify_others(self, method: str, params: Any, session_id: str) -> None:
        return None

    def on_close(self, callback: Callable[[], None]) -> None:
        return None  # the process ends with its one connection
