"""AsyncClient: tokend for a Python agent on asyncio (the same calls as Client, awaited).

    async with await AsyncClient.connect("my-agent") as tokend:
        sid = await tokend.create_session("gpt-4o")
        await tokend.append(sid, "user", [{"type": "text", "text": prompt}])

The daemon is found or started as `tokend lsp` does it (in a worker thread: starting it may take
seconds). Replies resolve the awaiting calls; notifications go to the handlers given to `on`;
`append` is sent again with the same `message.id` after a lost connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokend.client.calls import (
    ConnectionLost,
    Part,
    RpcError,
    append_params,
    assemble_params,
    create_params,
    initialize_params,
)
from tokend.client.framing import FrameReader, encode
from tokend.daemon.spawn import connect_or_spawn

Handler = Callable[[Any], None]
log = logging.getLogger(__name__)


class AsyncClient:
    """One connection to the daemon, for asyncio (see the module's docstring)."""

    def __init__(
        self,
        client_name: str = "python-agent",
        *,
        workspace_uri: str | None = None,
        daemon: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.client_name, self.workspace_uri, self.daemon = client_name, workspace_uri, daemon
        self.timeout = timeout
        self.retries = 2
        self._handlers: dict[str, list[Handler]] = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.StreamWriter, asyncio.Future[Any]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls,
        client_name: str = "python-agent",
        *,
        workspace_uri: str | None = None,
        daemon: str | None = None,
        timeout: float = 120.0,
    ) -> AsyncClient:
        client = cls(client_name, workspace_uri=workspace_uri, daemon=daemon, timeout=timeout)
        await client._open()
        return client

    async def _open(self) -> None:
        sock = await asyncio.to_thread(connect_or_spawn, self.daemon)
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        self._writer = writer
        self._reader_task = asyncio.create_task(self._read(reader, writer))
        await self.request("initialize", initialize_params(self.client_name, self.workspace_uri))
        self.notify("initialized", {})

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = FrameReader()
        try:
            while chunk := await reader.read(1 << 16):
                for message in frames.feed(chunk):
                    self._dispatch(message)
        except (OSError, ValueError):
            pass
        finally:
            if self._writer is writer:
                self._writer = None
            for msg_id in [i for i, (w, _) in self._pending.items() if w is writer]:
                _, future = self._pending.pop(msg_id)
                if not future.done():
                    future.set_exception(ConnectionLost("the connection ended before the reply"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            entry = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if entry is not None and not entry[1].done():
                entry[1].set_result(message)
            return
        if "id" in message:  # a request from the daemon that this client does not serve
            error = {"code": -32601, "message": f"not served: {message['method']}"}
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        for handler in self._handlers.get(message["method"], []):
            try:
                handler(message.get("params"))
            except Exception:  # the agent's handler: the connection reads on
                log.exception("a %s handler failed", message["method"])

    def _send(self, message: dict[str, Any]) -> asyncio.StreamWriter:
        writer = self._writer
        if writer is None or writer.is_closing():
            raise ConnectionLost("not connected to the tokend daemon")
        writer.write(encode(message))
        return writer

    async def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        writer = self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        self._pending[msg_id] = (writer, future)
        try:
            await writer.drain()
            reply = await asyncio.wait_for(future, self.timeout if timeout is None else timeout)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ConnectionLost(f"the tokend daemon went away: {exc}") from exc
        finally:
            self._pending.pop(msg_id, None)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def on(self, method: str, handler: Handler) -> None:
        """Call `handler(params)` for each notification `method` (on the event loop)."""
        self._handlers.setdefault(method, []).append(handler)

    async def close(self) -> None:
        try:
            await self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
        except (ConnectionLost, RpcError, TimeoutError):
            pass
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def create_session(
        self,
        model: str,
        *,
        workspace_uri: str | None = None,
        title: str | None = None,
        context_window: int | None = None,
    ) -> str:
        workspace = workspace_uri or self.workspace_uri
        params = create_params(model, workspace, title, context_window)
        return str((await self.request("session/create", params))["sessionId"])

    async def append(
        self,
        session_id: str,
        role: str,
        parts: Sequence[Part],
        *,
        usage: Mapping[str, Any] | None = None,
        model: str | None = None,
        duration_ms: int | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        params = append_params(
            session_id,
            role,
            parts,
            usage=usage,
            model=model,
            duration_ms=duration_ms,
            message_id=message_id,
        )
        for attempt in itertools.count():
            try:
                return dict(await self.request("session/append", params))
            except ConnectionLost:
                if attempt >= self.retries:
                    raise
                await self._open()
        raise AssertionError("unreachable")

    async def assemble(
        self,
        session_id: str,
        *,
        format: str = "openai",
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        params = assemble_params(session_id, format, system, tools, **extra)
        return dict(await self.request("context/assemble", params))

    async def snapshot(self, session_id: str) -> dict[str, Any]:
        return dict(await self.request("budget/snapshot", {"sessionId": session_id}))

    async def compact(self, session_id: str, strategy: str = "auto") -> dict[str, Any]:
        params = {"sessionId": session_id, "strategy": strategy}
        return dict(await self.request("session/compact", params))
