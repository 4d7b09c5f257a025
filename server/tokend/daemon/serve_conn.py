"""Serving one connection: its whole life, from the first frame to the last.

`run_connection` builds the connection's server with the integrator's
`connection_factory(conn)`, hooks `exit` to close only this connection, reads LSP frames with
pygls's `run_async` through a size-bounded reader and an auth gate, and cleans up. Nothing one
connection sends (garbage, a cut frame, a huge Content-Length, `exit`, a handler that raises)
reaches another connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async

from tokend.core.errors import Unauthorized
from tokend.daemon.conn import Connection

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 << 20  # bytes; a bigger Content-Length closes the connection
CLOSE_GRACE_SECONDS = 5.0  # to flush queued replies after the client stops sending
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def authorize_initialize(conn: Connection, message: Any) -> bool:
    """The TCP auth gate: True if `message` may reach the server.

    The first message must be `initialize` with initializationOptions.authToken equal to the
    daemon's token. Otherwise the client gets an Unauthorized (-32007) error reply and the
    connection is closed before any method runs. The daemon calls this for every message of an
    unauthenticated connection; the integrator's handlers need not call it.
    """
    if getattr(message, "method", None) == "initialize":
        options = _field(
            getattr(message, "params", None), "initialization_options", "initializationOptions"
        )
        if conn.check_token(_field(options, "authToken")):
            conn.authenticated = True
            return True
    log.warning("connection %s: refused (no valid authToken in initialize)", conn.id)
    if getattr(message, "id", None) is not None:
        conn.send_error(
            message.id,
            Unauthorized.code,
            "this TCP listener needs initializationOptions.authToken: the contents of the "
            "token file in tokend's runtime directory",
        )
    conn.close()
    return False


class _Gate:
    """Stands in for the protocol in run_async: records clientInfo, enforces auth."""

    def __init__(self, conn: Connection, protocol: Any) -> None:
        self._conn = conn
        self._protocol = protocol
        self.structure_message = protocol.structure_message

    def handle_message(self, message: Any) -> None:
        conn = self._conn
        if conn.closing:
            return
        if getattr(message, "method", None) == "initialize":
            name = _field(
                _field(getattr(message, "params", None), "client_info", "clientInfo"), "name"
            )
            conn.client_name = name if isinstance(name, str) else None
        if not conn.authenticated and not authorize_initialize(conn, message):
            return
        self._protocol.handle_message(message)


class FrameTooLarge(ValueError):
    pass


class _BoundedReader:
    """An asyncio.StreamReader that refuses bodies over `max_frame_bytes`."""

    def __init__(self, reader: asyncio.StreamReader, max_frame_bytes: int) -> None:
        self._reader = reader
        self._max = max_frame_bytes
        self.last_length = 0  # bytes of the last body read (for the log: size, never content)

    async def readline(self) -> bytes:
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        if n > self._max:
            raise FrameTooLarge(f"Content-Length {n} exceeds {self._max} bytes")
        self.last_length = n
        return await self._reader.readexactly(n)


class _MalformedLog:
    """The logger run_async reports bad frames to: logs the first few, then every 100th."""

    def __init__(self, conn: Connection, reader: _BoundedReader) -> None:
        self._conn = conn
        self._reader = reader
        self.malformed = 0

    def debug(self, *args: Any) -> None:
        pass

    def exception(self, message: str, *args: Any) -> None:
        self.malformed += 1
        if self.malformed <= 3 or self.malformed % 100 == 0:
            log.warning(
                "connection %s: malformed message #%d (%d bytes): %s",
                self._conn.id,
                self.malformed,
                self._reader.last_length,
                _kind(sys.exc_info()[1]),
            )


def _kind(error: BaseException | None) -> str:
    """What is wrong with a body, without any of its bytes (a secret may be inside)."""
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 (byte {error.start}: {error.reason})"
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg}, char {error.pos})"
    if isinstance(error, JsonRpcException):
        return f"refused ({error.code}: {error.message})"
    return f"not a JSON-RPC message ({type(error).__name__})"


def _reply_to_bad_message(conn: Connection, error: Exception, _source: object) -> None:
    if isinstance(error, ValueError):  # json.JSONDecodeError, UnicodeDecodeError
        conn.send_error(None, PARSE_ERROR, f"the message body is not JSON: {error}")
    elif isinstance(error, JsonRpcException):
        conn.send_error(None, error.code, error.message or "invalid message")
    else:
        conn.send_error(None, INVALID_REQUEST, "the message is not a JSON-RPC 2.0 object")


async def run_connection(
    conn: Connection,
    reader: asyncio.StreamReader,
    connection_factory: Callable[[Connection], Any],
    *,
    max_frame_bytes: int = MAX_FRAME_BYTES,
) -> None:
    """Serve one connection until the client leaves, sends `exit`, or breaks the framing."""
    try:
        server = connection_factory(conn)
        protocol = server.protocol
        if not hasattr(protocol, "on_exit"):
            raise TypeError(
                f"{type(protocol).__name__} has no on_exit hook, so `exit` would stop the whole "
                "daemon; derive the protocol from tokend.lsp.protocol.ConnectionProtocol"
            )
        protocol.on_exit = conn.close
        protocol.set_writer(conn.outbox)
        conn.server = server
        # run_async is annotated with pygls's concrete protocol and logging.Logger; it only calls
        # structure_message/handle_message and debug/exception, which the stand-ins provide.
        bounded = _BoundedReader(reader, max_frame_bytes)
        await run_async(
            stop_event=threading.Event(),
            reader=bounded,
            protocol=_Gate(conn, protocol),  # type: ignore[arg-type]
            logger=_MalformedLog(conn, bounded),  # type: ignore[arg-type]
            error_handler=lambda error, source: _reply_to_bad_message(conn, error, source),
        )
    except (asyncio.IncompleteReadError, ValueError, ConnectionError) as exc:
        log.info("connection %s: closing after a framing error: %s", conn.id, exc)
    except Exception:
        log.exception("connection %s: its server failed; closing this connection only", conn.id)
    finally:
        _release_server(conn.server)
        conn.close()
        try:
            await asyncio.wait_for(conn.outbox.wait_closed(), CLOSE_GRACE_SECONDS)
        except TimeoutError:
            conn.outbox.abort()


def _release_server(server: Any) -> None:
    """Handlers still running finish (a write in flight completes); their replies are dropped."""
    if server is None:
        return
    pool = getattr(server, "_thread_pool", None)
    if pool is not None:
        pool.shutdown(wait=False)
    # pygls caches get_message_type/get_result_type per (protocol, method) in a class-wide
    # lru_cache, which would keep the last 128 closed connections' servers alive.
    for name in ("get_message_type", "get_result_type"):
        cache_clear = getattr(getattr(type(server.protocol), name, None), "cache_clear", None)
        if cache_clear is not None:
            cache_clear()


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None
