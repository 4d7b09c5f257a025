"""A small JSON-RPC client over LSP framing for end-to-end tests of real tokend processes."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")


class RpcClient:
    """Speaks LSP-framed JSON-RPC over an asyncio reader/writer pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: Any) -> None:
        self.reader = reader
        self.writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task = asyncio.create_task(self._read_loop())

    async def _read_loop(self) -> None:
        try:
            while True:
                length = 0
                while True:
                    line = await self.reader.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = json.loads(await self.reader.readexactly(length))
                if "id" in body and ("result" in body or "error" in body):
                    future = self._pending.pop(body["id"], None)
                    if future and not future.done():
                        future.set_result(body)
                elif "method" in body:
                    await self.notifications.put(body)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("connection closed"))

    def send_raw(self, payload: bytes) -> None:
        self.writer.write(payload)

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        body = await asyncio.wait_for(future, timeout)
        if "error" in body:
            raise RpcError(body["error"])
        return body["result"]

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self, options: dict[str, Any] | None = None, name: str = "test") -> Any:
        result = await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": {},
                "clientInfo": {"name": name},
                "initializationOptions": options or {},
            },
        )
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
