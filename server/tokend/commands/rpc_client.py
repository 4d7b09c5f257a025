"""A small synchronous JSON-RPC client for the running daemon's unix socket (LSP framing).

The CLI sends the commands that change a session through it, so the daemon's loaded sessions
stay right. It never starts a daemon: `DaemonClient.connect` is None when none answers.
"""

from __future__ import annotations

import itertools
import os
import socket
from types import TracebackType
from typing import Any, Self

from tokend.adapters import rendezvous
from tokend.adapters.rendezvous import FrameError, PeerClosed, UnsafePathError
from tokend.core.errors import ALL_ERRORS, TokendError

CONNECT_TIMEOUT_SECONDS = 5.0
REPLY_TIMEOUT_SECONDS = 300.0  # a compaction of a long session may take a while
NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError)
_ERRORS_BY_CODE = {cls.code: cls for cls in ALL_ERRORS}


class NoReply(TokendError):
    """The daemon did not answer within the time asked for (it may still be working)."""


class DaemonGone(TokendError):
    """The connection to the daemon is lost (it stopped or restarted); a new one may work."""


class DaemonClient:
    """One connection to the daemon: `initialize`d, then requests one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._stream = sock.makefile("rb")
        self._ids = itertools.count(1)
        self._late = False  # a request went unanswered in its time: no goodbye at close

    @classmethod
    def connect(cls, name: str | None = None, client_name: str = "tokend cli") -> Self | None:
        """A client of the daemon called `name` (default: the user's), None when none runs."""
        try:
            sock = _connect(name)
        except NOT_LISTENING:
            return None
        except UnsafePathError as exc:
            raise TokendError(str(exc)) from None
        sock.settimeout(REPLY_TIMEOUT_SECONDS)
        client = cls(sock)
        try:
            client.request(
                "initialize",
                {"processId": os.getpid(), "capabilities": {}, "clientInfo": {"name": client_name}},
            )
            client.notify("initialized", {})
        except BaseException:
            client._close_socket()
            raise
        return client

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """The result, or the daemon's error raised as its core.errors type (same code);
        NoReply after `timeout` seconds (default REPLY_TIMEOUT_SECONDS) without the answer;
        the connection is then of no more use (the answer may still come), and closing it
        says no goodbye (a `shutdown` would wait behind the request)."""
        msg_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        if timeout is not None:
            self._sock.settimeout(timeout)
        try:
            while True:
                body = self._read()
                if body.get("id") != msg_id or "method" in body:
                    continue  # notifications (budget/didChange, logMessage) are not ours to show
                if "error" in body:
                    raise _as_error(body["error"])
                return body.get("result")
        except NoReply:
            self._late = True
            raise
        finally:
            if timeout is not None:
                self._sock.settimeout(REPLY_TIMEOUT_SECONDS)

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        """Say goodbye (shutdown, exit) and close; a daemon that is already gone is fine."""
        if self._late:
            self._close_socket()
            return
        try:
            self.request("shutdown")
            self.notify("exit")
        except (OSError, TokendError):
            pass
        finally:
            self._close_socket()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _close_socket(self) -> None:
        self._stream.close()
        self._sock.close()

    def _send(self, body: dict[str, Any]) -> None:
        try:
            self._sock.sendall(rendezvous.frame(body))
        except OSError as exc:
            raise DaemonGone(f"the daemon closed the connection ({exc})") from None

    def _read(self) -> dict[str, Any]:
        try:
            return rendezvous.read_frame(self._stream)
        except TimeoutError:
            waited = self._sock.gettimeout() or REPLY_TIMEOUT_SECONDS
            raise NoReply(
                f"the daemon did not answer in {waited:g} s; see `tokend status --daemon`"
            ) from None
        except PeerClosed as exc:
            raise DaemonGone(str(exc)) from None
        except FrameError as exc:
            raise TokendError(str(exc)) from None
        except OSError as exc:
            raise DaemonGone(f"the connection to the daemon failed ({exc})") from None


def _connect(name: str | None) -> socket.socket:
    """The default daemon through the light path (no runtime folder is created by a client);
    a named one through daemon.paths, which checks the name."""
    if name is None:
        return rendezvous.connect_default(timeout=CONNECT_TIMEOUT_SECONDS)
    from tokend.daemon.paths import socket_path

    return rendezvous.connect_unix(socket_path(name), timeout=CONNECT_TIMEOUT_SECONDS)


def _as_error(error: Any) -> TokendError:
    """A JSON-RPC error object as the core.errors type with its code (TokendError otherwise)."""
    if not isinstance(error, dict):
        return TokendError(f"the daemon failed: {error!r}")
    message = str(error.get("message") or "the daemon failed")
    data = error.get("data") if isinstance(error.get("data"), dict) else None
    code = error.get("code")
    kind = _ERRORS_BY_CODE.get(code, TokendError) if isinstance(code, int) else TokendError
    return kind(message, data)
