"""TokendProtocol: pygls's LanguageServerProtocol with tokend's methods typed our way.

pygls turns params of methods it does not know into namedtuples; here every method outside
the LSP specification keeps its params as plain JSON, and the handler structures them with
`wire.from_wire` so a bad field gets an InvalidParams error naming it.

It also decides what a client's mistakes cost in the log. A request that fails with a
JSON-RPC error (a TokendError turned into one by `server.rpc`, or an LSP request whose params do
not fit its type) is the client's problem: its reply says why, and the log gets one line
(method, code, message) at INFO, never a traceback and never the params, which may hold
whatever the user pasted. Anything else a handler raises is a bug and keeps pygls's traceback.

JSON-RPC's edges: a notification never gets a reply (nor a pop-up) whatever is wrong with it;
a request after `shutdown` gets InvalidRequest; `jsonrpc` other than "2.0" gets InvalidRequest;
params nested deeper than MAX_PARAMS_DEPTH, or holding NaN, Infinity or a lone surrogate, get
InvalidParams before any handler sees them (strict.py), as does a string or an object where an
array is due, in one step.

No reply carries a traceback: a bug answers InternalError naming the method and the exception's
type, and its traceback goes to the daemon's log. Every error message a reply carries is
bounded (core/excerpt.py), and no reply is written with NaN or Infinity.

Until `initialize` (`initialize_gate`), a request gets ServerNotInitialized (-32002) and a
notification other than `exit` is dropped; a second `initialize` gets InvalidRequest.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import logging
from concurrent.futures import Future
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import default_converter, lsp_method

from tokend.core.errors import StoreError, TokenizerUnavailable
from tokend.core.excerpt import bounded
from tokend.lsp.connection import ConnectionProtocol
from tokend.lsp.replies import internal_error, params_problem
from tokend.lsp.strict import MAX_PARAMS_DEPTH, forget_frames, untrusted_problem
from tokend.lsp.structure_hooks import strict_lsp_values, strict_sequences

MsgId = int | str

log = logging.getLogger(__name__)

__all__ = ["MAX_PARAMS_DEPTH", "ConnectionProtocol", "TokendProtocol", "shared_converter"]

SERVER_SIDE_CODES = frozenset({StoreError.code, TokenizerUnavailable.code, -32603})
"""Error codes that say the daemon, not the request, is at fault: logged at WARNING."""

_request_method: contextvars.ContextVar[str] = contextvars.ContextVar("tokend_request_method")
"""The method of the request being handled (pygls runs each message in its own context)."""


@attrs.define
class RawRequest:
    id: MsgId
    method: str
    jsonrpc: str
    params: Any = None


@attrs.define
class RawNotification:
    method: str
    jsonrpc: str
    params: Any = None


@attrs.define
class UnfitMessage:
    """An LSP request or notification whose params do not fit its lsprotocol type.

    `id` is None for a notification. `problem` names fields, never their values."""

    id: MsgId | None
    method: str
    jsonrpc: str
    problem: str
    params: Any = None  # never kept: the auth gate reads `params` of every message


@functools.cache
def shared_converter() -> cattrs.Converter:
    """One pygls converter for every connection: pass `converter_factory=shared_converter`.

    pygls builds a converter per server by default, and cattrs then generates its (un)structure
    code again for each one: ~25 ms and ~180 KB per connection. The converter is only read
    after it is built, so connections can share it.
    """
    converter: cattrs.Converter = default_converter()
    strict_lsp_values(converter)  # values taken as sent, objects where objects are due
    strict_sequences(converter)  # a string or an object where an array is due: one error
    return converter


class TokendProtocol(ConnectionProtocol):
    """`exit` closes only this connection under a daemon (ConnectionProtocol's on_exit hook)."""

    initialize_seen = False
    """Whether this connection sent its `initialize` request (initialize_gate)."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        served_only(result.capabilities)
        return result

    # pygls's copy of the documents is not kept (it applied edits on the loop: 249 ms for an
    # 8.7 MB buffer); the handlers keep them (service.workspace.documents), edited beside it.

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: Any) -> Any:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: Any) -> Any:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: Any) -> Any:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user_handler(self, method: str, params: Any) -> Any:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    def structure_message(self, data: dict[str, Any]) -> Any:
        if not isinstance(data, dict) or "jsonrpc" not in data:
            return data  # a nested object: json calls this hook for every one
        method = data.get("method")
        if not method or not isinstance(method, str):
            return super().structure_message(data)  # a response to a request of ours
        if problem := untrusted_problem(data.get("params"), MAX_PARAMS_DEPTH):
            return _unfit(data, method, problem)
        if method not in types.METHOD_TO_TYPES:
            if "id" in data:
                return RawRequest(data["id"], method, data["jsonrpc"], data.get("params"))
            return RawNotification(method, data["jsonrpc"], data.get("params"))
        message_type = self.get_message_type(method)
        if message_type is None or "error" in data or "result" in data:
            return super().structure_message(data)
        try:
            message = self._converter.structure(data, message_type)
        except Exception as exc:  # cattrs' ClassValidationError, or a TypeError deeper down
            problem = params_problem(exc)
            forget_frames(exc)
            return _unfit(data, method, problem)
        if method == types.CANCEL_REQUEST and not _is_id(message.params.id):
            return _unfit(data, method, "invalid params: id must be an integer or a string")
        return message

    def handle_message(self, message: Any) -> None:
        if not initialize_gate(self, message):
            return
        if isinstance(message, UnfitMessage):
            self._refuse(message.id, message.method, JsonRpcInvalidParams(message.problem))
            return
        version = getattr(message, "jsonrpc", self.VERSION)
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None) if method is not None else None
        if version != self.VERSION:  # pygls would log the whole message at WARNING
            error = JsonRpcInvalidRequest(f'jsonrpc must be "2.0", not {str(version)[:16]!r}')
            self._refuse(msg_id, method or "(response)", error)
            return
        if self._shutdown and method is not None and method != types.EXIT:
            # pygls drops it without a word; LSP wants InvalidRequest for a request.
            error = JsonRpcInvalidRequest("the server was shut down: only `exit` is accepted")
            self._refuse(msg_id, method, error)
            return
        try:
            super().handle_message(message)
        except Exception:  # a bug in a notification's handler: this connection lives on
            log.exception("%s failed", bounded(str(method), 200))
            if msg_id is not None:
                self._send_response(msg_id, error=internal_error(str(method)))

    def _refuse(self, msg_id: MsgId | None, method: str, error: JsonRpcException) -> None:
        """Reply `error` to a request (a notification gets no reply) and log one line."""
        kind = "request" if msg_id is not None else "notification"
        log.info("%s %s refused: code %d, %s", kind, method, error.code, error.message)
        if msg_id is not None:
            self._send_response(msg_id, error=error.to_response_error())

    # pygls's private hooks (pinned pygls 2.1): _handle_request runs each request in its own
    # context, and _send_handler_result replies once the handler's future is done.

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        _request_method.set(method_name)
        super()._handle_request(msg_id, method_name, params)

    def _get_handler(self, feature_name: str) -> Any:
        """The method's handler; an unknown method's MethodNotFound names the closest ones."""
        try:
            return super()._get_handler(feature_name)
        except JsonRpcMethodNotFound:
            known = [*self.fm.builtin_features, *self.fm.features]
            close = difflib.get_close_matches(str(feature_name)[:200], known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            message = f"Method Not Found: {bounded(str(feature_name), 80)}{hint} (protocol.md lists the methods)"
            raise JsonRpcMethodNotFound(message=message) from None

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        """The handler's result, or its JSON-RPC error (one log line), or, for a bug, an
        InternalError without the traceback pygls would put in `data` (the traceback goes to
        the daemon's log)."""
        error = None if future.cancelled() else future.exception()
        if error is None:
            super()._send_handler_result(future, msg_id=msg_id)  # a result, or cancelled
            return
        self._request_futures.pop(msg_id, None)
        method = _request_method.get(f"request {msg_id!r}")
        if not isinstance(error, JsonRpcException):
            log.error("%s failed", method, exc_info=error)
            self._send_response(msg_id, error=internal_error(method, error))
            forget_frames(error)
            return
        level = logging.WARNING if error.code in SERVER_SIDE_CODES else logging.INFO
        log.log(level, "%s failed: code %d, %s", method, error.code, error.message)
        self._send_response(msg_id, error=error.to_response_error())
        forget_frames(error)  # answered: its frames (and the params they hold) may go

    def _check_handler_result(self, future: Future[Any]) -> None:
        """A notification handler that raised. A JSON-RPC error (bad params) is the client's:
        one log line, and no message to the client (JSON-RPC never answers a notification).
        Anything else is a bug: logged with its traceback."""
        error = None if future.cancelled() else future.exception()
        if isinstance(error, JsonRpcException):
            log.info("a notification failed: code %d, %s", error.code, error.message)
            forget_frames(error)
        elif error is not None:
            log.error("a notification handler failed", exc_info=error)
            forget_frames(error)


def served_only(capabilities: types.ServerCapabilities) -> None:
    """Drop what pygls advertises whatever the server serves: an executeCommandProvider with
    no commands and an empty fileOperations."""
    if capabilities.execute_command_provider and not capabilities.execute_command_provider.commands:
        capabilities.execute_command_provider = None
    workspace = capabilities.workspace
    if workspace is not None and workspace.file_operations is not None:
        if not any(attrs.asdict(workspace.file_operations, recurse=False).values()):
            workspace.file_operations = None


def initialize_gate(protocol: TokendProtocol, message: Any) -> bool:
    """Whether `message` may reach the server, as LSP orders a connection's start: before the
    `initialize` request a request is answered ServerNotInitialized (-32002) and a notification
    is dropped (`exit` excepted); `initialize` is accepted once, a second one gets
    InvalidRequest. Replies to the server's own requests always pass."""
    method = getattr(message, "method", None)
    if not isinstance(method, str) or getattr(message, "jsonrpc", None) != protocol.VERSION:
        return True  # a reply, or a message handle_message refuses for its envelope
    msg_id = getattr(message, "id", None)
    if method == types.INITIALIZE and msg_id is not None:
        if protocol.initialize_seen:
            error: JsonRpcException = JsonRpcInvalidRequest(
                "initialize was already sent on this connection"
            )
            protocol._refuse(msg_id, method, error)
            return False
        # one whose params do not fit is refused (InvalidParams) and may be sent again
        protocol.initialize_seen = not isinstance(message, UnfitMessage)
        return True
    if protocol.initialize_seen or method == types.EXIT:
        return True
    if msg_id is not None:
        error = JsonRpcServerNotInitialized(f"send initialize before {method}")
        protocol._refuse(msg_id, method, error)
    else:
        log.info("notification %s dropped: initialize was not sent yet", method)
    return False


def _is_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _unfit(data: dict[str, Any], method: str, problem: str) -> UnfitMessage:
    msg_id = data.get("id")
    return UnfitMessage(msg_id if _is_id(msg_id) else None, method, str(data["jsonrpc"]), problem)
