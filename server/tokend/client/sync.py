"""Client: tokend for a Python agent, blocking calls.

    with Client.connect("my-agent", workspace_uri=...) as tokend:
        sid = tokend.create_session("claude-sonnet-4-5")
        tokend.append(sid, "user", [{"type": "text", "text": prompt}])
        request = tokend.assemble(sid, format="anthropic", system=SYSTEM, tools=TOOLS)

`connect` finds the user's daemon, or starts it, exactly as `tokend lsp` does. A reader thread
takes the daemon's messages: replies go to the calls waiting for them, notifications
(`budget/didChange`, `session/didCompact`) to the handlers given to `on`. `append` sends a
`message.id` and, when the connection is lost before its reply, connects again and sends the
same append: the daemon stores it once.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
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
METHOD_NOT_FOUND = -32601


class _Pending:
    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock  # the connection the request went out on
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None


class Client:
    """One connection to the daemon (see the module's docstring)."""

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
        self.retries = 2  # reconnections an append may make after a lost reply
        self._handlers: dict[str, list[Handler]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._sock: socket.socket | None = None

    @classmethod
    def connect(
        cls,
        client_name: str = "python-agent",
        *,
        workspace_uri: str | None = None,
        daemon: str | None = None,
        timeout: float = 120.0,
    ) -> Client:
        """Connect to the user's daemon (named `daemon`), starting it if none runs."""
        client = cls(client_name, workspace_uri=workspace_uri, daemon=daemon, timeout=timeout)
        client._open()
        return client

    # -- the connection --------------------------------------------------------------------

    def _open(self) -> None:
        sock = connect_or_spawn(self.daemon)
        with self._lock:
            self._sock = sock
        threading.Thread(target=self._read, args=(sock,), name="tokend-client", daemon=True).start()
        self.request("initialize", initialize_params(self.client_name, self.workspace_uri))
        self.notify("initialized", {})

    def _read(self, sock: socket.socket) -> None:
        frames = FrameReader()
        try:
            while chunk := sock.recv(1 << 16):
                for message in frames.feed(chunk):
                    self._dispatch(message)
        except (OSError, ValueError):
            pass
        with self._lock:  # everything still waiting on this connection has lost it
            if self._sock is sock:
                self._sock = None
            lost = [i for i, p in self._pending.items() if p.sock is sock]
            waiting = [self._pending.pop(i) for i in lost]
        for pending in waiting:
            pending.done.set()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            with self._lock:
                pending = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if pending is not None:
                pending.reply = message
                pending.done.set()
            return
        if "id" in message:  # a request from the daemon that this client does not serve
            error = {"code": METHOD_NOT_FOUND, "message": f"not served: {message['method']}"}
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        for handler in self._handlers.get(message["method"], []):
            try:
                handler(message.get("params"))
            except Exception:  # the agent's handler: the connection reads on
                log.exception("a %s handler failed", message["method"])

    def _send(self, message: dict[str, Any]) -> None:
        with self._lock:
            sock = self._sock
        if sock is None:
            raise ConnectionLost("not connected to the tokend daemon")
        try:
            sock.sendall(encode(message))
        except OSError as exc:
            raise ConnectionLost(f"the tokend daemon went away: {exc}") from exc

    def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; raises RpcError for an error reply and
        ConnectionLost when the connection ends first."""
        msg_id = next(self._ids)
        with self._lock:
            pending = self._pending[msg_id] = _Pending(self._sock)
        try:
            self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            if not pending.done.wait(self.timeout if timeout is None else timeout):
                raise TimeoutError(f"no reply to {method} in time")
        finally:
            with self._lock:
                self._pending.pop(msg_id, None)
        if pending.reply is None:
            raise ConnectionLost(f"the connection ended before the reply to {method}")
        if "error" in pending.reply:
            raise RpcError(pending.reply["error"])
        return pending.reply.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def on(self, method: str, handler: Handler) -> None:
        """Call `handler(params)` for each notification `method` (on the reader thread)."""
        self._handlers.setdefault(method, []).append(handler)

    def close(self) -> None:
        """`shutdown` and `exit`, then close the socket."""
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
        except (ConnectionLost, RpcError, TimeoutError):
            pass
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tokend's methods ------------------------------------------------------------------

    def create_session(
        self,
        model: str,
        *,
        workspace_uri: str | None = None,
        title: str | None = None,
        context_window: int | None = None,
    ) -> str:
        """A new session (this connection follows it); its id."""
        workspace = workspace_uri or self.workspace_uri
        params = create_params(model, workspace, title, context_window)
        return str(self.request("session/create", params)["sessionId"])

    def append(
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
        """session/append; sent again with the same `message.id` after a lost connection."""
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
                return dict(self.request("session/append", params))
            except ConnectionLost:
                if attempt >= self.retries:
                    raise
                self._open()
        raise AssertionError("unreachable")

    def assemble(
        self,
        session_id: str,
        *,
        format: str = "openai",
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """context/assemble: the next request to send, in the provider's shape."""
        params = assemble_params(session_id, format, system, tools, **extra)
        return dict(self.request("context/assemble", params))

    def snapshot(self, session_id: str) -> dict[str, Any]:
        return dict(self.request("budget/snapshot", {"sessionId": session_id}))

    def compact(self, session_id: str, strategy: str = "auto") -> dict[str, Any]:
        params = {"sessionId": session_id, "strategy": strategy}
        return dict(self.request("session/compact", params))
