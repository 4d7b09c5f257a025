"""A small synchronous JSON-RPC client for the running daemon's unix socket (LSP framing).

The CLI sends the commands that change a session through it, so the daemon's loaded sessions
stay right. It never starts a daemon: `DaemonClient.connect` is None when none answers.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from types import TracebackType
from typing import Any, Self

from tokend.core.errors import ALL_ERRORS, TokendError
from tokend.daemon.paths import UnsafePathError, socket_path
from tokend.daemon.spawn import connect_unix

CONNECT_TIMEOUT_SECONDS = 5.0
REPLY_TIMEOUT_SECONDS = 300.0  # a compaction of a long session may take a while
NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError)
_ERRORS_BY_CODE = {cls.code: cls for cls in ALL_ERRORS}


class DaemonClient:
    """One connection to the daemon: `initialize`d, then requests one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._stream = sock.makefile("rb")
        self._ids = itertools.count(1)

    @classmethod
    def connect(cls, name: str | None = None, client_name: str = "tokend cli") -> Self | None:
        """A client of the daemon called `name` (default: the user's), None when none runs."""
        path = socket_path(name)
        try:
            sock = connect_unix(path, timeout=CONNECT_TIMEOUT_SECONDS)
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

    def request(self, method: str, params: Any = None) -> Any:
        """The result, or the daemon's error raised as its core.errors type (same code)."""
        msg_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            body = self._read()
            if body.get("id") != msg_id or "method" in body:
                continue  # notifications (budget/didChange, logMessage) are not ours to show
            if "error" in body:
                raise _as_error(body["error"])
            return body.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        """Say goodbye (shutdown, exit) and close; a daemon that is already gone is fine."""
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
        data = json.dumps(body).encode()
        try:
            self._sock.sendall(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        except OSError as exc:
            raise TokendError(f"the daemon closed the connection ({exc})") from None

    def _read(self) -> dict[str, Any]:
        try:
            length = 0
            while (line := self._stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if not line:
                raise TokendError("the daemon closed the connection")
            body = json.loads(self._stream.read(length))
        except TimeoutError:
            raise TokendError(
                f"the daemon did not answer in {REPLY_TIMEOUT_SECONDS:.0f} s; "
                "see `tokend status --daemon`"
            ) from None
        except (OSError, ValueError) as exc:
            raise TokendError(f"unreadable reply from the daemon ({exc})") from None
        if not isinstance(body, dict):
            raise TokendError("unreadable reply from the daemon (not a JSON object)")
        return body


def _as_error(error: Any) -> TokendError:
    """A JSON-RPC error object as the core.errors type with its code (TokendError otherwise)."""
    if not isinstance(error, dict):
        return TokendError(f"the daemon failed: {error!r}")
    message = str(error.get("message") or "the daemon failed")
    data = error.get("data") if isinstance(error.get("data"), dict) else None
    code = error.get("code")
    kind = _ERRORS_BY_CODE.get(code, TokendError) if isinstance(code, int) else TokendError
    return kind(message, data)
