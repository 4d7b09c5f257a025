"""Connections: one per client of the daemon, each with its own pygls server and outbox.

A Connection is what a connection's server may know of its client (id, clientInfo name, session
slot, auth state) and how to reach it; the Registry holds the daemon's live ones. How one is
served, from the first frame to the last, is in serve_conn.py.
"""

from __future__ import annotations

import hmac
import itertools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

from tokend.daemon.outbox import Outbox

PeerKind = Literal["unix", "tcp"]


class DaemonHandle(Protocol):
    """What a connection's server may ask of the daemon."""

    def busy(self) -> AbstractContextManager[None]: ...

    def status(self) -> dict[str, Any]: ...


class Connection:
    """One client: its id, who it is, its session slot, its outbox and its pygls server.

    `requires_auth` is True on TCP listeners: until an `initialize` carrying
    initializationOptions.authToken passes `check_token`, no method reaches the server.
    """

    def __init__(
        self,
        conn_id: str,
        peer: PeerKind,
        outbox: Outbox,
        daemon: DaemonHandle,
        registry: Registry,
        *,
        expected_token: str | None = None,
        peer_pid: int | None = None,
    ) -> None:
        self.id = conn_id
        self.peer = peer
        self.outbox = outbox
        self.daemon = daemon
        self.registry = registry
        self.peer_pid = peer_pid
        self.requires_auth = expected_token is not None
        self.authenticated = not self.requires_auth
        self.client_name: str | None = None  # clientInfo.name from initialize
        self.session_id: str | None = None  # set by the session methods when attached
        self.server: Any = None  # the LanguageServer the factory built
        self.connected_at = time.monotonic()
        self._expected_token = expected_token

    def check_token(self, token: object) -> bool:
        """True if `token` is this listener's auth token (constant-time compare)."""
        if self._expected_token is None:
            return True
        return isinstance(token, str) and hmac.compare_digest(
            token.encode(), self._expected_token.encode()
        )

    @property
    def closing(self) -> bool:
        return self.outbox.closing

    def close(self) -> None:
        """Flush queued replies, then close this connection only."""
        self.outbox.close()

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        """Run `callback` once when the connection ends (e.g. unsubscribe its watchers)."""
        self.outbox.add_close_callback(callback)

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        self.outbox.write(
            encode_frame(
                {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
            )
        )

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "clientName": self.client_name,
            "sessionId": self.session_id,
            "peer": self.peer,
        }


class Registry:
    """The daemon's live connections, in connection order."""

    def __init__(self) -> None:
        self._connections: dict[str, Connection] = {}
        self._ids = itertools.count(1)

    def new_id(self) -> str:
        return f"c{next(self._ids)}"

    def add(self, conn: Connection) -> None:
        self._connections[conn.id] = conn

    def remove(self, conn: Connection) -> None:
        self._connections.pop(conn.id, None)

    def get(self, conn_id: str) -> Connection | None:
        return self._connections.get(conn_id)

    def __len__(self) -> int:
        return len(self._connections)

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._connections.values()))

    def describe(self) -> list[dict[str, Any]]:
        """The open connections (one that is closing is already gone for its client)."""
        return [conn.describe() for conn in self if not conn.closing]

    def notify_all(
        self,
        method: str,
        params: Any,
        *,
        session_id: str | None = None,
        exclude: Connection | None = None,
    ) -> int:
        """Send a notification to every served connection (attached to `session_id` if given)."""
        sent = 0
        for conn in self:
            if conn is exclude or conn.server is None or conn.closing or not conn.authenticated:
                continue
            if session_id is not None and conn.session_id != session_id:
                continue
            conn.server.protocol.notify(method, params)
            sent += 1
        return sent


def encode_frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
