"""The one JSON-RPC client of the process tests: LSP framing over real pipes and sockets.

One codec (`frame`, `Frames`), one initialize, one error type, behind two faces:
- `LspClient`, blocking, over any pair of file descriptors (a socket, a process's pipes). It
  speaks raw frames so tests can also send garbage; notifications that arrive while a request
  waits for its reply are kept in `notifications`.
- `RpcClient` / `ProcessClient`, on asyncio streams, for tests that keep several requests in
  flight at once; `answers[method]` answers the server's own requests (session/summarize).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


class ConnectionClosed(Exception):
    pass


class RpcError(Exception):
    """An error reply, raised by RpcClient.request."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")


class AnswerError(Exception):
    """Raised by an answer in `RpcClient.answers`: the client replies with this error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def frame(message: dict[str, Any] | bytes) -> bytes:
    """One LSP frame: a message (encoded as JSON) or a body sent as it is."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize_params(client_name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "processId": None,
        "rootUri": None,
        "capabilities": {},
        "clientInfo": {"name": client_name},
        "initializationOptions": options or {},
    }


class Frames:
    """Whole messages out of the bytes received so far (a bytearray: a 31 MB reply in linear
    time)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk

    def next(self) -> dict[str, Any] | None:
        """The next whole message, or None until more bytes arrive."""
        header_end = self.data.find(b"\r\n\r\n")
        if header_end < 0:
            return None
        length = _content_length(bytes(self.data[:header_end]))
        end = header_end + 4 + length
        if len(self.data) < end:
            return None
        body = bytes(self.data[header_end + 4 : end])
        del self.data[:end]
        return dict(json.loads(body))


def _content_length(headers: bytes) -> int:
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError(f"no Content-Length in {headers!r}")


class LspClient:
    """A blocking client over a pair of file descriptors."""

    def __init__(self, read_fd: int, write_fd: int, owner: Any = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.owner = owner  # the socket or process that keeps the fds open
        self.notifications: list[dict[str, Any]] = []
        self._frames = Frames()
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

    @classmethod
    def initialized(cls, path: str | os.PathLike[str], client_name: str) -> LspClient:
        """A client of the daemon socket at `path`, initialized as `client_name`."""
        client = cls.unix(path)
        assert "result" in client.initialize(client_name)
        return client

    def send_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view) :]

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(frame(message))

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

    def initialize(self, client_name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.request("initialize", initialize_params(client_name, options))
        if "result" in response:
            self.notify("initialized", {})
        return response

    def read_message(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message; raises ConnectionClosed on EOF and TimeoutError on timeout."""
        deadline = time.monotonic() + timeout
        while (message := self._frames.next()) is None:
            if not self._fill(deadline):
                raise ConnectionClosed()
        return message

    def poll(self) -> dict[str, Any] | None:
        """The next whole message if it has arrived, without waiting; ConnectionClosed on EOF."""
        while select.select([self.read_fd], [], [], 0)[0]:
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise ConnectionClosed()
            self._frames.feed(chunk)
        return self._frames.next()

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True once the peer closes the connection (messages until then are discarded)."""
        deadline = time.monotonic() + timeout
        try:
            while self._fill(deadline):
                self._frames.data.clear()
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
        chunk = os.read(self.read_fd, 1 << 20)
        self._frames.feed(chunk)
        return bool(chunk)

    def close(self) -> None:
        if isinstance(self.owner, socket.socket):
            self.owner.close()
        elif isinstance(self.owner, subprocess.Popen):
            if self.owner.stdin:
                self.owner.stdin.close()


Answer = Callable[[Any], Awaitable[Any]]


class RpcClient:
    """The same framing over an asyncio reader/writer pair: requests may overlap. Requests of
    the server with an entry in `answers` are answered (the answer's result, or an AnswerError
    as a JSON-RPC error) and kept in `asked`; other requests and notifications are queued."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self.reader = reader
        self.writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.answers: dict[str, Answer] = {}
        self.asked: list[dict[str, Any]] = []
        self._answering: set[asyncio.Task[None]] = set()
        self._task = asyncio.create_task(self._read_loop())

    async def _read_loop(self) -> None:
        frames = Frames()
        try:
            while chunk := await self.reader.read(1 << 20):
                frames.feed(chunk)
                while (body := frames.next()) is not None:
                    self._receive(body)
        except ConnectionError:
            return
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("connection closed"))

    def _receive(self, body: dict[str, Any]) -> None:
        if "id" in body and ("result" in body or "error" in body):
            future = self._pending.pop(body["id"], None)
            if future and not future.done():
                future.set_result(body)
        elif "id" in body and body.get("method") in self.answers:
            self.asked.append(body)
            task = asyncio.create_task(self._answer(body))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif "method" in body:
            self.notifications.put_nowait(body)

    async def _answer(self, body: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"]}
        try:
            reply["result"] = await self.answers[body["method"]](body.get("params"))
        except AnswerError as error:
            reply["error"] = {"code": error.code, "message": error.message}
        self.send_raw(frame(reply))

    def send_raw(self, payload: bytes) -> None:
        self.writer.write(payload)

    def begin(self, method: str, params: Any = None) -> tuple[int, asyncio.Future[Any]]:
        """Send a request without waiting: its id, and the future of its whole reply."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self.send_raw(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return msg_id, future

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        """The request's result; an error reply raises RpcError."""
        _, future = self.begin(method, params)
        body = await asyncio.wait_for(future, timeout)
        if "error" in body:
            raise RpcError(body["error"])
        return body["result"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send_raw(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def initialize(self, options: dict[str, Any] | None = None, name: str = "test") -> Any:
        result = await self.request("initialize", initialize_params(name, options))
        self.notify("initialized", {})
        return result

    async def next_notification(self, method: str, timeout: float = 10) -> dict[str, Any]:
        while True:
            body = await asyncio.wait_for(self.notifications.get(), timeout)
            if body["method"] == method:
                return body["params"]

    async def close(self) -> None:
        self._task.cancel()


class ProcessClient(RpcClient):
    """A tokend process on stdio."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None and proc.stdin is not None
        super().__init__(proc.stdout, proc.stdin)
        self.proc = proc

    @classmethod
    async def spawn(cls, *args: str, cwd: Path, env: dict[str, str]) -> ProcessClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tokend",
            *args,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def shutdown(self) -> int:
        try:
            await self.request("shutdown", None, timeout=10)
            self.notify("exit")
            return await asyncio.wait_for(self.proc.wait(), 10)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            await self.close()
