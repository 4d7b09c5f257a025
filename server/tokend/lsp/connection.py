"""ConnectionProtocol: pygls's LanguageServerProtocol as one connection of the daemon speaks it.

Its `exit` closes only its own connection (`on_exit`), it reports each reply (`on_response`),
and it writes what it sends its own way: never NaN or Infinity, an error bounded and without a
traceback (replies.safe_error), a result already written as JSON text as it is, and a big
message encoded beside the event loop a piece at a time (encode.py), in its place among the
connection's messages (the daemon's Outbox.write_later).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol, lsp_method

from tokend.lsp.encode import encode_message, is_small
from tokend.lsp.replies import safe_error
from tokend.lsp.wire import JsonBytes, JsonText

MsgId = int | str

log = logging.getLogger(__name__)


class ConnectionProtocol(LanguageServerProtocol):
    """A LanguageServerProtocol whose `exit` closes only its own connection.

    The daemon sets `on_exit` on every connection's protocol; without a daemon (stdio) `exit`
    ends the process as pygls does. Any protocol with an `on_exit` attribute works the same.
    """

    on_exit: Callable[[], None] | None = None
    output_closed = False
    """True once `exit` closed stdout (stdio): nothing is written after that (a notification
    queued by background work is dropped, not an "I/O operation on closed file")."""
    on_response: Callable[[], None] | None = None
    """Called, from any thread, after each reply to a client's request is written (the daemon
    counts the requests in flight with it)."""

    def _send_response(self, msg_id: MsgId, result: Any = None, error: Any = None) -> None:
        try:
            if error is not None:
                error = safe_error(error)
            if error is None and isinstance(result, JsonText | JsonBytes):
                self._send_json_text(msg_id, result)
            elif error is None:
                self._send_result(msg_id, result)
            else:
                super()._send_response(msg_id, result, error)
        finally:
            if self.on_response is not None:
                self.on_response()

    def _send_result(self, msg_id: MsgId, result: Any) -> None:
        """A reply as pygls writes it (the same keys, in the same order), without its
        converter's copy of the result: a typed handler's result is plain JSON already
        (wire.to_wire), and pygls's JsonRPCResponseMessage took a deep copy of it through
        cattrs before every reply was looked at and encoded (a `budget/snapshot`: 13 of its
        32 us). An attrs result (pygls's own: `initialize`) is converted once here."""
        self._result_types.pop(msg_id, None)
        if hasattr(result, "__attrs_attrs__"):
            result = self._serialize_message(result)
        self._send_data({"id": msg_id, "jsonrpc": JsonRPCProtocol.VERSION, "result": result})

    def _send_json_text(self, msg_id: MsgId, result: JsonText | JsonBytes) -> None:
        """A reply whose result is JSON already: framed as pygls frames its replies (JsonBytes:
        its pieces joined into the frame, the one copy)."""
        self._result_types.pop(msg_id, None)
        if self.output_closed:
            return
        if self.writer is None:
            log.error("no transport to send the reply to %r", msg_id)
            return
        head = f'{{"id": {json.dumps(msg_id)}, "jsonrpc": "2.0", "result": '.encode()
        # json.dumps writes ASCII: as many bytes as characters
        body = result.pieces if isinstance(result, JsonBytes) else (result.encode(),)
        header = b""
        if self._include_headers:
            header = (
                f"Content-Length: {len(head) + sum(map(len, body)) + 1}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            ).encode()
        self.writer.write(b"".join((header, head, *body, b"}")))

    def _send_data(self, data: Any) -> None:
        """pygls's writer (pinned pygls 2.1), but never with NaN or Infinity: a reply that
        would carry one is not JSON (node cannot parse it), so its request gets InternalError
        instead, and a notification is dropped; either way the log says so. Nothing is written
        once `exit` closed the output. A big message is encoded beside the loop, a piece at a
        time (lsp/encode.py), and keeps its place among the connection's messages."""
        if not data or self.writer is None or self.output_closed:
            return
        if hasattr(data, "__attrs_attrs__"):
            data = self._serialize_message(data)
        write_later = getattr(self.writer, "write_later", None)
        if write_later is not None and not is_small(data, self._serialize_message):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a worker thread: already beside the loop
                frame = self._frame(data)
                if frame is not None:
                    self.writer.write(frame)
                return
            write_later(loop.run_in_executor(None, self._frame, data))
            return
        try:
            body = json.dumps(data, default=self._serialize_message, allow_nan=False)
        except ValueError:
            instead = self._without_nan(data)
            if instead is None:
                return
            body = instead
        header = ""
        if self._include_headers:
            header = (
                f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
        try:
            written = self.writer.write((header + body).encode(self.CHARSET))
            if inspect.isawaitable(written):  # the stdio server's writer
                _ = asyncio.ensure_future(written)
        except BrokenPipeError:
            log.info("the client closed its end: a message was not sent")

    def _frame(self, data: Any) -> bytes | None:
        """A big message's frame, encoded a piece at a time (in a worker thread); None when it
        held NaN and was a notification."""
        try:
            body = encode_message(data, self._serialize_message)
        except ValueError:
            text = self._without_nan(data)
            if text is None:
                return None
            body = text.encode()
        if not self._include_headers:
            return body
        header = (
            f"Content-Length: {len(body)}\r\n"
            f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        )
        return header.encode() + body

    def _without_nan(self, data: Any) -> str | None:
        """What is sent instead of a message holding NaN or Infinity: an InternalError for a
        reply, nothing for anything else."""
        log.error("a message to the client held NaN or Infinity: not sent")
        msg_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
        method = data.get("method") if isinstance(data, dict) else getattr(data, "method", None)
        if msg_id is None or method is not None:
            return None
        error = JsonRpcInternalError("tokend computed a number JSON cannot carry (NaN)")
        reply = types.ResponseErrorMessage(id=msg_id, error=error.to_response_error())
        return json.dumps(reply, default=self._serialize_message)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        if self.on_exit is None:
            self.output_closed = True  # pygls closes stdout next
            yield from super().lsp_exit(*args)
            return
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        self.on_exit()
