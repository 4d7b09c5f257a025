"""A blocking LSP-framed JSON-RPC client over any pair of file descriptors (tests only).

It speaks raw frames so tests can also send garbage. Notifications that arrive while a
request waits for its reply are kept in `notifications`.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import socket
import subprocess
import time
from typing import Any


class ConnectionClosed(Exception):
    pass


class LspClient:
    def __init__(self, read_fd: int, write_fd: int, owner: Any = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.owner = owner  # the socket or process that keeps the fds open
        self.notifications: list[dict[str, Any]] = []
        self._buffer = b""
        self._ids = itertools.count(1)

    @classmethod
    def unix(cls, path: str | os.PathLike[str]) -> LspClient:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.fspath(path))
        return cls(sock.fileno(), sock.fileno(), sock)

    @classmethod
    def tcp(cls, host: str, port: int) -> LspClient:
        sock = socket.create_connection((host, port))
        return cls(sock.fileno(), sock.fileno(), sock)

    @classmethod
    def process(cls, proc: subprocess.Popen[bytes]) -> LspClient:
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc.stdout.fileno(), proc.stdin.fileno(), proc)

    def send_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view) :]

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None, timeout: float = 10.0) -> dict[str, Any]:
        """Send a request and return its whole response message (result or error)."""
        msg_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self.read_message(max(0.0, deadline - time.monotonic()))
            if "id" in message and "method" not in message and message["id"] == msg_id:
                return message
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def result(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        """The request's result; an error reply fails the test, showing the reply."""
        reply = self.request(method, params, timeout=timeout)
        assert "result" in reply, reply
        return reply["result"]

    @classmethod
    def initialized(cls, path: str | os.PathLike[str], client_name: str) -> LspClient:
        """A client of the daemon socket at `path`, initialized as `client_name`."""
        client = cls.unix(path)
        assert "result" in client.initialize(client_name)
        return client

    def initialize(self, client_name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {
            "processId": None,
            "rootUri": None,
            "capabilities": {},
            "clientInfo": {"name": client_name},
            "initializationOptions": options or {},
        }
        response = self.request("initialize", params)
        if "result" in response:
            self.notify("initialized", {})
        return response

    def read_message(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message; raises ConnectionClosed on EOF and TimeoutError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            header_end = self._buffer.find(b"\r\n\r\n")
            if header_end >= 0:
                length = _content_length(self._buffer[:header_end])
                if len(self._buffer) >= header_end + 4 + length:
                    body = self._buffer[header_end + 4 : header_end + 4 + length]
                    self._buffer = self._buffer[header_end + 4 + length :]
                    return json.loads(body)
            if not self._fill(deadline):
                raise ConnectionClosed()

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True once the peer closes the connection (messages until then are discarded)."""
        deadline = time.monotonic() + timeout
        try:
            while self._fill(deadline):
                self._buffer = b""
        except TimeoutError:
            return False
        except OSError:
            return True
        return True

    def _fill(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        readable, _, _ = select.select([self.read_fd], [], [], max(0.0, remaining))
        if not readable:
            raise TimeoutError("no message from the server in time")
        chunk = os.read(self.read_fd, 1 << 16)
        self._buffer += chunk
        return bool(chunk)

    def close(self) -> None:
        if isinstance(self.owner, socket.socket):
            self.owner.close()
        elif isinstance(self.owner, subprocess.Popen):
            if self.owner.stdin:
                self.owner.stdin.close()


def _content_length(headers: bytes) -> int:
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError(f"no Content-Length in {headers!r}")
