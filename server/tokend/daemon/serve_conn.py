"""Serving one connection: its whole life, from the first frame to the last.

`run_connection` builds the connection's server with the integrator's `connection_factory(conn)`,
hooks `exit` to close only this connection, reads frames (frames.py) and hands each message to
the server (dispatch.py), until the client leaves, sends `exit` or breaks the framing, or the
daemon stops. Then it waits for the requests still in flight, flushes their replies and closes.
Nothing one connection sends reaches another connection:

- Backpressure: no next frame is read while MAX_IN_FLIGHT of its requests run, or while its
  unread replies pass the outbox's soft limit; and the loop yields after every message, so a
  connection with a full buffer takes turns with the others.
- Before authentication (TCP) a frame may hold PRE_AUTH_MAX_FRAME_BYTES and must arrive within
  AUTH_TIMEOUT_SECONDS of connecting; a bigger or later one closes the connection. What the
  unauthenticated connections of the whole daemon cost is bounded by its PreAuthGate
  (preauth.py): a few are read at a time, and each refusal holds its turn a moment.
- Broken framing closes the connection after a ParseError (id null); so do MALFORMED_IN_A_ROW
  bodies in a row that are not JSON-RPC. One bad body gets its error and the connection lives on.
- A body over MAX_FRAME_BYTES is read through without being kept and answered with
  RequestTooLarge for its id; the connection lives on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokend.core.errors import RequestTooLarge, Unauthorized
from tokend.daemon.conn import Connection
from tokend.daemon.dispatch import Dispatcher
from tokend.daemon.envelope import PARSE_ERROR
from tokend.daemon.frames import Body, BrokenFraming, Oversized, read_frame
from tokend.daemon.preauth import PreAuthGate

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 << 20  # a bigger body is skipped and answered with RequestTooLarge
PRE_AUTH_MAX_FRAME_BYTES = 256 << 10  # before a TCP client authenticates: initialize fits
AUTH_TIMEOUT_SECONDS = 5.0
MAX_IN_FLIGHT = 32  # requests of one connection handled at once; reading waits beyond
MALFORMED_IN_A_ROW = 16
CLOSE_GRACE_SECONDS = 5.0  # to flush queued replies after the client stops sending
IN_FLIGHT_GRACE_SECONDS = 120.0  # requests still running when the client leaves are awaited


@dataclass(frozen=True)
class Limits:
    max_frame_bytes: int = MAX_FRAME_BYTES
    pre_auth_max_frame_bytes: int = PRE_AUTH_MAX_FRAME_BYTES
    auth_timeout_seconds: float = AUTH_TIMEOUT_SECONDS
    max_in_flight: int = MAX_IN_FLIGHT
    pre_auth: PreAuthGate = field(default_factory=PreAuthGate)


async def run_connection(
    conn: Connection,
    reader: asyncio.StreamReader,
    connection_factory: Callable[[Connection], Any],
    limits: Limits = Limits(),
) -> None:
    """Serve one connection until the client leaves, sends `exit`, breaks the framing, or
    `conn.stop_reading()` is called; then answer what is in flight and close.

    The server is built (`connection_factory(conn)`) when the first message that may reach it
    arrives: a connection that only sends garbage, or never authenticates, costs no server.
    Everything runs in the connection's own task, so what the factory sets in the context
    (the log's "who is being served") holds to the end."""
    task = asyncio.current_task()
    assert task is not None
    reading = True

    def stop() -> None:
        if reading:
            task.cancel()

    conn.on_stop_reading(stop)
    dispatcher = Dispatcher(
        conn, lambda: _build_server(conn, connection_factory), limits.max_frame_bytes
    )
    try:
        await _read_messages(conn, reader, dispatcher, limits)
    except asyncio.CancelledError:
        if not conn.reading_stopped:  # the daemon's loop is going away, not just this reader
            conn.outbox.abort()
            _release_server(conn.server)
            raise
        task.uncancel()
    except Exception:
        log.exception("connection %s: its server failed; closing this connection only", conn.id)
    finally:
        reading = False
    await _finish(conn)


def _build_server(conn: Connection, connection_factory: Callable[[Connection], Any]) -> Any:
    """The connection's server, wired to it; returns its protocol."""
    server = connection_factory(conn)
    protocol = server.protocol
    if not hasattr(protocol, "on_exit"):
        raise TypeError(
            f"{type(protocol).__name__} has no on_exit hook, so `exit` would stop the whole "
            "daemon; derive the protocol from tokend.lsp.protocol.ConnectionProtocol"
        )
    protocol.on_exit = conn.close
    if hasattr(protocol, "on_response"):
        protocol.on_response = conn.request_answered
        conn.counts_requests = True
    protocol.set_writer(conn.outbox)
    conn.server = server
    return protocol


async def _read_messages(
    conn: Connection, reader: asyncio.StreamReader, dispatcher: Dispatcher, limits: Limits
) -> None:
    auth_deadline = asyncio.get_running_loop().time() + limits.auth_timeout_seconds
    while await conn.ready_to_read(limits.max_in_flight, conn.outbox.soft_limit_bytes):
        if not await _read_one(conn, reader, dispatcher, limits, auth_deadline):
            return
        await asyncio.sleep(0)  # the next connection's turn


async def _read_one(
    conn: Connection,
    reader: asyncio.StreamReader,
    dispatcher: Dispatcher,
    limits: Limits,
    auth_deadline: float,
) -> bool:
    """Read and hand on one frame; False once the connection must close."""
    try:
        if conn.authenticated:
            frame = await read_frame(reader, limits.max_frame_bytes, skip_oversized=True)
        else:
            async with asyncio.timeout_at(auth_deadline):
                frame = await read_frame(
                    reader, limits.pre_auth_max_frame_bytes, skip_oversized=False
                )
    except BrokenFraming as exc:
        log.info("connection %s: broken framing (%s); closing it", conn.id, exc)
        conn.send_error(None, PARSE_ERROR, f"broken framing: {exc}; closing the connection")
        return False
    except TimeoutError:
        log.warning(
            "connection %s: not authenticated within %.0f s; closing it",
            conn.id,
            limits.auth_timeout_seconds,
        )
        conn.send_error(None, Unauthorized.code, "authenticate (initialize) first, promptly")
        return False
    except ConnectionError:
        return False
    if frame is None:
        return False
    if conn.authenticated:
        return await _hand_on(conn, frame, dispatcher)
    async with limits.pre_auth.turn():  # a frame before authentication: one of a few at a time
        going_on = await _hand_on(conn, frame, dispatcher)
        if not conn.authenticated:
            await limits.pre_auth.hold()  # refused: the next one waits a moment
    return going_on


async def _hand_on(conn: Connection, frame: Body | Oversized, dispatcher: Dispatcher) -> bool:
    if isinstance(frame, Body):
        if frame.spooled is None:
            dispatcher.dispatch(frame.data)
        else:
            await dispatcher.dispatch_big(frame.data, frame.spooled)
        if dispatcher.malformed_in_a_row >= MALFORMED_IN_A_ROW or not conn.authenticated:
            log.info("connection %s: closing after malformed messages", conn.id)
            return False
    elif not frame.skipped:
        _refuse_before_auth(conn, frame)
        return False
    else:
        _refuse_too_large(conn, frame)
    return True


def _refuse_before_auth(conn: Connection, frame: Oversized) -> None:
    log.warning(
        "connection %s: a %d-byte message before authentication (limit %d); closing it",
        conn.id,
        frame.length,
        frame.limit,
    )
    conn.send_error(
        None,
        Unauthorized.code,
        f"before authentication a message may hold {frame.limit:,} bytes: send initialize "
        "with initializationOptions.authToken first",
    )


def _refuse_too_large(conn: Connection, frame: Oversized) -> None:
    """RequestTooLarge for a request's id (id null if it could not be told); none for a
    notification."""
    log.warning(
        "connection %s: skipped a %d-byte %s over the %d-byte limit",
        conn.id,
        frame.length,
        frame.method or "message",
        frame.limit,
    )
    if frame.msg_id is None and frame.method is not None:
        return  # a notification: JSON-RPC never answers one
    error = RequestTooLarge(
        f"the message is {frame.length:,} bytes, over the {frame.limit >> 20} MiB tokend reads; "
        "nothing of it was stored: send large tool output in parts, or trim it",
        {"bytes": frame.length, "limit": frame.limit},
    )
    conn.send_error(frame.msg_id, error.code, error.message, error.data)


async def _finish(conn: Connection) -> None:
    """Answer the requests in flight (a write the client sent is not lost because it left),
    flush the replies, close."""
    if conn.in_flight:
        try:
            await asyncio.wait_for(conn.requests_answered(), IN_FLIGHT_GRACE_SECONDS)
        except TimeoutError:
            log.warning(
                "connection %s: %d requests still unanswered after %.0f s; closing anyway",
                conn.id,
                conn.in_flight,
                IN_FLIGHT_GRACE_SECONDS,
            )
    _release_server(conn.server)
    conn.close()
    try:
        await asyncio.wait_for(conn.outbox.wait_closed(), CLOSE_GRACE_SECONDS)
    except TimeoutError:
        conn.outbox.abort()
        await conn.outbox.wait_closed()
    conn.forget()


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
    release = getattr(server, "release", None)
    if release is not None:  # the server lets go of its reference cycles (lsp/server.py)
        release()
