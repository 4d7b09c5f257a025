"""From one frame's body to the connection's server: parse, check, authenticate, hand over.

The JSON-RPC envelope is checked here (envelope.py words what is wrong), for any protocol, so
that every mistake is answered the same way and to the message's own id when it has one:

- a body that is not JSON: ParseError (id null);
- a big body (frames.py) whose strings other than tool outputs, read back, pass the limit of a
  whole frame: RequestTooLarge to its id;
- not an object, `jsonrpc` other than "2.0", an id that is not an integer or a string, neither
  a method nor a result/error: InvalidRequest (to its id when it has a usable one);
- nested deeper than MAX_MESSAGE_DEPTH (params deeper than lsp.strict's MAX_PARAMS_DEPTH),
  told by a scan before anything is parsed (jsonscan.nesting_exceeds): InvalidParams to its id
  (read from its top level alone: jsonscan.shallow_top_level), none to a notification;
- params the protocol cannot structure: its error, to the request's id; a notification never
  gets a reply.

On TCP, until `initialize` carries the right initializationOptions.authToken, nothing reaches the
server (authorize_initialize), and nothing is parsed: a body that does not hold the token's text
is refused after a look at its first PRE_AUTH_SCAN_BYTES for its id (microseconds, whatever the
body holds), so that unauthenticated clients cannot make the loop parse for them. Requests handed to a server whose protocol reports its replies
(ConnectionProtocol.on_response) are counted in flight on the connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from pygls.exceptions import JsonRpcException

from tokend.adapters.heap import release_freed_memory
from tokend.core.errors import InvalidParams, RequestTooLarge, TokendError, Unauthorized
from tokend.daemon.conn import Connection
from tokend.daemon.envelope import INVALID_REQUEST, PARSE_ERROR, body_problem, envelope_problem
from tokend.daemon.jsonscan import nesting_exceeds, shallow_top_level, top_level_fields
from tokend.daemon.spooled_strings import BodyTooLarge, SpooledStrings
from tokend.lsp.strict import MAX_PARAMS_DEPTH

log = logging.getLogger(__name__)

BIG_BODY_BYTES = 4 << 20  # once such a request is answered, freed memory goes back (memory.py)
INTERNAL_ERROR = -32603
LOGGED_IN_FULL = 3  # malformed messages logged one by one on a connection; then every 100th
MAX_MESSAGE_DEPTH = MAX_PARAMS_DEPTH + 1  # the message object is one level above its params
PRE_AUTH_SCAN_BYTES = 4096  # of an unauthenticated body refused unparsed: read for its id
UNAUTHORIZED_MESSAGE = (
    "this TCP listener needs initializationOptions.authToken: the contents of the "
    "token file in tokend's runtime directory"
)


def authorize_initialize(conn: Connection, message: dict[str, Any]) -> bool:
    """The TCP auth gate, on a message's JSON object: True if it may reach the server.

    The first message must be `initialize` with initializationOptions.authToken equal to the
    daemon's token. Otherwise the client gets an Unauthorized (-33007) error reply and the
    connection is closed before any method runs (and before a server is built for it). The
    daemon calls this for every message of an unauthenticated connection; the integrator's
    handlers need not call it.
    """
    if message.get("method") == "initialize":
        options = _field(message.get("params"), "initializationOptions")
        if conn.check_token(_field(options, "authToken")):
            conn.authenticated = True
            return True
    msg_id = message.get("id")
    refuse_unauthenticated(conn, msg_id, is_request=msg_id is not None and "method" in message)
    return False


def refuse_unauthenticated(conn: Connection, msg_id: Any, *, is_request: bool) -> None:
    """Unauthorized to a request (a notification gets no reply), then close."""
    log.warning("connection %s: refused (no valid authToken in initialize)", conn.id)
    if is_request:
        conn.send_error(msg_id, Unauthorized.code, UNAUTHORIZED_MESSAGE)
    conn.close()


class Dispatcher:
    """Hands one connection's messages to its server, built by `build_server` (which returns
    the server's protocol) when the first message that may reach it arrives."""

    def __init__(
        self, conn: Connection, build_server: Callable[[], Any], max_body_bytes: int = 64 << 20
    ) -> None:
        self._conn = conn
        self._max_body_bytes = max_body_bytes  # a big body's strings read back count to this
        self._build_server = build_server
        self._protocol: Any = None
        self.malformed = 0
        self.malformed_in_a_row = 0
        self._trim: asyncio.Task[None] | None = None

    def dispatch(self, body: bytes) -> None:
        """Hand one body on."""
        if not self._conn.authenticated and not self._conn.may_hold_token(body):
            # unparsed, it cannot be told from a notification: id null unless one is seen
            fields = top_level_fields(body[:PRE_AUTH_SCAN_BYTES])
            refuse_unauthenticated(self._conn, fields.msg_id, is_request=True)
            return
        parsed = self._parse(body)
        if parsed is not None:
            self._hand_over(parsed[0], parsed[1], big=len(body) > BIG_BODY_BYTES)

    async def dispatch_big(self, body: bytes, spooled: SpooledStrings) -> None:
        """Hand on a big body read as it arrived (frames.py): `body` without its big strings,
        `spooled` those strings; the ones read back are read a piece at a time, the loop
        serving other connections between the pieces."""
        if spooled.problem is not None:
            self._malformed(len(body), spooled.problem)
            self._conn.send_error(None, PARSE_ERROR, "the message body is not JSON")
            return
        parsed = self._parse(body)
        if parsed is None:
            return
        data, msg_id = parsed
        if not await self._put_back(spooled, data, msg_id):
            return
        protocol = self._ready(data)
        if protocol is None:
            return
        # pygls structures the params, and tokend checks their nesting, in Python: tens of ms
        # for a big message's thousands of values, so beside the loop (which gets the
        # interpreter back every few ms) rather than on it.
        try:
            message = await asyncio.to_thread(protocol.structure_message, data)
        except JsonRpcException as exc:
            self._unfit(data, msg_id, exc)
            return
        if not self._conn.closing:
            self._deliver(message, data, msg_id, big=True)

    def _parse(self, body: bytes) -> tuple[dict[str, Any], int | str | None] | None:
        """The JSON-RPC object of `body` and its id; None when it was answered as malformed."""
        try:
            if nesting_exceeds(body, MAX_MESSAGE_DEPTH):
                raise RecursionError
            data = json.loads(body)
        except RecursionError:
            self._refuse_too_deep(body)
            return None
        except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError
            self._malformed(len(body), body_problem(exc))
            self._conn.send_error(None, PARSE_ERROR, "the message body is not JSON")
            return None
        problem, msg_id = envelope_problem(data)
        if problem is not None:
            self._malformed(len(body), problem, answered=msg_id is not None)
            self._conn.send_error(msg_id, INVALID_REQUEST, problem)
            return None
        self.malformed_in_a_row = 0
        return data, msg_id

    def _refuse_too_deep(self, body: bytes) -> None:
        """InvalidParams to a request nested too deep (its id and method read from its top
        level alone); nothing to a notification."""
        top = shallow_top_level(body) or {}
        problem, msg_id = envelope_problem(top)
        kind = f"nested more than {MAX_PARAMS_DEPTH} levels deep"
        is_request = msg_id is not None or problem is not None or "method" not in top
        self._malformed(len(body), kind, answered=msg_id is not None)
        if is_request:
            self._conn.send_error(msg_id, InvalidParams.code, f"invalid params: {kind}")

    def _hand_over(self, data: dict[str, Any], msg_id: int | str | None, *, big: bool) -> None:
        """A well-formed message to the server (built now if it is the first); `big`: give
        freed memory back once the connection's requests are answered."""
        protocol = self._ready(data)
        if protocol is None:
            return
        try:
            message = protocol.structure_message(data)
        except JsonRpcException as exc:
            self._unfit(data, msg_id, exc)
            return
        self._deliver(message, data, msg_id, big=big)

    def _ready(self, data: dict[str, Any]) -> Any:
        """The server's protocol (built now if this is the first message that may reach it);
        None if the message may not reach it (closing, or refused by the TCP auth gate)."""
        conn = self._conn
        if conn.closing or (not conn.authenticated and not authorize_initialize(conn, data)):
            return None
        if data.get("method") == "initialize":
            name = _field(_field(data.get("params"), "clientInfo"), "name")
            conn.client_name = name if isinstance(name, str) else None
        if self._protocol is None:
            try:
                self._protocol = self._build_server()
            except Exception as exc:  # never close a connection without a JSON-RPC error
                self._unserved(data, exc)
                return None
        return self._protocol

    def _unserved(self, data: dict[str, Any], exc: Exception) -> None:
        """The connection's server could not be built (say, a damaged store): the request gets
        the error; the next message tries again."""
        msg_id = data.get("id") if "method" in data else None
        if isinstance(exc, TokendError):
            code, message = exc.code, exc.message
        else:
            code, message = INTERNAL_ERROR, f"the daemon could not serve this connection: {exc}"
        log.error("connection %s: cannot serve it: %s", self._conn.id, message, exc_info=exc)
        if msg_id is not None:
            self._conn.send_error(msg_id, code, message)

    def _unfit(self, data: dict[str, Any], msg_id: int | str | None, exc: JsonRpcException) -> None:
        """pygls could not structure the message's params: its error, to a request."""
        if msg_id is not None:
            self._conn.send_error(msg_id, exc.code, exc.message or "invalid message")
        log.info("connection %s: %s refused: %s", self._conn.id, data.get("method"), exc)

    def _deliver(
        self, message: Any, data: dict[str, Any], msg_id: int | str | None, *, big: bool
    ) -> None:
        conn = self._conn
        if msg_id is not None and "method" in data and conn.counts_requests:
            conn.request_started()
        self._protocol.handle_message(message)
        if big and conn.counts_requests and self._trim is None:
            self._trim = asyncio.get_running_loop().create_task(self._trim_when_answered())

    async def _trim_when_answered(self) -> None:
        """Once the connection's requests are answered (the big one with them), give the
        memory its work freed back to the system (off the loop: malloc_trim beside a thread
        that allocates, say a big buffer being tagged, took 6.9 s)."""
        try:
            await self._conn.requests_answered()
            await asyncio.get_running_loop().run_in_executor(None, release_freed_memory)
        finally:
            self._trim = None

    async def _put_back(self, spooled: SpooledStrings, data: dict[str, Any], msg_id: Any) -> bool:
        """A big body's strings into its parsed skeleton; False if refused as too large, or
        for a bounded field (lsp.strict.FIELD_CHARS) over its bound, before reading it back."""
        if (problem := spooled.bounds_problem(data)) is not None:
            log.info("connection %s: %s refused: %s", self._conn.id, data.get("method"), problem)
            if msg_id is not None:
                self._conn.send_error(msg_id, InvalidParams.code, problem)
            return False
        try:
            await spooled.resolve_async(data, self._max_body_bytes)
        except BodyTooLarge as exc:
            log.warning("connection %s: %s refused: %s", self._conn.id, data.get("method"), exc)
            if msg_id is not None or "method" not in data:
                error = RequestTooLarge(
                    f"{exc}: over the {self._max_body_bytes >> 20} MiB tokend reads besides "
                    "tool results' outputs; nothing of it was stored",
                    {"bytes": spooled.body_bytes, "limit": self._max_body_bytes},
                )
                self._conn.send_error(msg_id, error.code, error.message, error.data)
            return False
        return True

    def _malformed(self, size: int, kind: str, *, answered: bool = False) -> None:
        """Log a malformed message by size and kind, never its bytes (a secret may be inside):
        the first few, then every 100th. At WARNING (which the client also gets as
        window/logMessage) unless the error reply went to the message's own id."""
        self.malformed += 1
        self.malformed_in_a_row += 1
        if self.malformed <= LOGGED_IN_FULL or self.malformed % 100 == 0:
            log.log(
                logging.INFO if answered else logging.WARNING,
                "connection %s: malformed message #%d (%d bytes): %s",
                self._conn.id,
                self.malformed,
                size,
                kind,
            )


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else None
