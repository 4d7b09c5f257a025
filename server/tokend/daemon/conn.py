"""Connections: one per client of the daemon, each with its own pygls server and outbox.

A Connection is what a connection's server may know of its client (id, clientInfo name, session
slot, auth state) and how to reach it, and how much of its work is in flight (requests read and
not yet answered, replies queued and not yet sent): its reader waits while either is high, and
the daemon does not exit while any is in flight. The Registry holds the daemon's live ones. How
one is served, from the first frame to the last, is in serve_conn.py.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

from tokend.core.excerpt import bounded
from tokend.daemon.outbox import Outbox
from tokend.lsp.host import HostConnection, HostStatus

PeerKind = Literal["unix", "tcp"]


class DaemonHandle(Protocol):
    """What a connection's server may ask of the daemon."""

    def busy(self) -> AbstractContextManager[None]: ...

    def status(self) -> HostStatus: ...


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
        self.in_flight = 0  # requests handed to the server and not yet answered
        self.counts_requests = False  # True once the server's protocol reports its replies
        self._expected_token = expected_token
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._progress = asyncio.Event()  # set when a request is answered or replies went out
        self._stop_reading: Callable[[], None] = lambda: None
        self._reading_stopped = False
        outbox.add_progress_callback(self._progress.set)

    def check_token(self, token: object) -> bool:
        """True if `token` is this listener's auth token (constant-time compare)."""
        if self._expected_token is None:
            return True
        return isinstance(token, str) and hmac.compare_digest(
            token.encode(), self._expected_token.encode()
        )

    def may_hold_token(self, body: bytes) -> bool:
        """False if `body` cannot carry this listener's token (its text appears nowhere in
        it, neither as UTF-8 nor JSON-escaped): such a body is refused before it is parsed."""
        if self._expected_token is None:
            return True
        token = self._expected_token
        return token.encode() in body or json.dumps(token)[1:-1].encode() in body

    @property
    def closing(self) -> bool:
        return self.outbox.closing

    def close(self) -> None:
        """Flush queued replies, then close this connection only."""
        self.outbox.close()

    # -- work in flight (the reader and the daemon's lifetime depend on it) -------------------

    def request_started(self) -> None:
        """A request was handed to the server (on the loop)."""
        self.in_flight += 1

    def request_answered(self) -> None:
        """The server sent a request's reply; any thread (pygls answers from its workers)."""
        if threading.get_ident() == self._loop_thread:
            self._answered()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._answered)

    def _answered(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self._progress.set()

    async def ready_to_read(self, max_in_flight: int, max_queued_bytes: int) -> bool:
        """Wait while `max_in_flight` requests are being handled or the client has more than
        `max_queued_bytes` of replies unread (backpressure on this connection only). False
        once reading must stop: `exit`, a refusal, a client gone, the daemon stopping."""
        while self._may_read() and (
            self.in_flight >= max_in_flight or self.outbox.queued_bytes > max_queued_bytes
        ):
            self._progress.clear()
            await self._progress.wait()
        return self._may_read()

    def _may_read(self) -> bool:
        return not self._reading_stopped and not self.closing

    async def requests_answered(self) -> None:
        """Wait until every request handed to the server has been answered."""
        while self.in_flight:
            self._progress.clear()
            await self._progress.wait()

    def on_stop_reading(self, callback: Callable[[], None]) -> None:
        """How to stop this connection's reader (called at once if stop_reading came first)."""
        self._stop_reading = callback
        if self._reading_stopped:
            callback()

    def stop_reading(self) -> None:
        """Read no more requests (the daemon is stopping); those in flight are still answered."""
        self._reading_stopped = True
        self._stop_reading()

    @property
    def reading_stopped(self) -> bool:
        return self._reading_stopped

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        """Run `callback` once when the connection ends (e.g. unsubscribe its watchers)."""
        self.outbox.add_close_callback(callback)

    def send_error(
        self, msg_id: int | str | None, code: int, message: str, data: Any = None
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": bounded(message)}
        if data is not None:
            error["data"] = data
        self.outbox.write(encode_frame({"jsonrpc": "2.0", "id": msg_id, "error": error}))

    def forget(self) -> None:
        """Once closed and its close callbacks ran: drop the server, the reader's stop hook
        (which holds the connection's finished task, whose context holds this connection)
        and the outbox's callbacks, so that nothing of the connection waits in a reference
        cycle for the collector."""
        self.server = None
        self._stop_reading = lambda: None
        self.outbox.forget_callbacks()

    def describe(self) -> HostConnection:
        return HostConnection(self.id, self.client_name, self.session_id, self.peer)


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

    def describe(self) -> tuple[HostConnection, ...]:
        """The open connections (one that is closing is already gone for its client)."""
        return tuple(conn.describe() for conn in self if not conn.closing)

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
    """A message as an LSP frame; never NaN or Infinity (ValueError): they are not JSON."""
    body = json.dumps(message, allow_nan=False).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
