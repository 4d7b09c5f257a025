"""TokendProtocol: what a client's mistakes cost in the log (one line, no body) and what a bug
keeps (its traceback). The real protocol and server, fed JSON as the wire carries it."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pygls.lsp.server import LanguageServer

from tokend.core.errors import InvalidParams
from tokend.lsp.protocol import TokendProtocol, shared_converter
from tokend.lsp.server import rpc

SECRET = "sk-live-0123456789"


class Capture:
    """A pygls writer that keeps what the server sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def close(self) -> None:
        pass


def _server(initialized: bool = True) -> tuple[LanguageServer, Capture]:
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )

    @server.feature("test/refuse")
    @rpc
    def refuse(ls: LanguageServer, params: Any) -> Any:
        raise InvalidParams("message.parts[0] must be an object with a 'type'")

    @server.feature("test/bug")
    def bug(ls: LanguageServer, params: Any) -> Any:
        raise KeyError("a bug")

    capture = Capture()
    server.protocol.set_writer(capture, include_headers=False)
    server.protocol.initialize_seen = initialized  # as after `initialize`, unless asked
    return server, capture


def _receive(server: LanguageServer, message: dict[str, Any]) -> None:
    protocol = server.protocol
    protocol.handle_message(json.loads(json.dumps(message), object_hook=protocol.structure_message))


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What reaches the daemon's log: tokend's records, and pygls's from WARNING up (the level
    the daemon keeps pygls at: at INFO it logs every body it sends)."""
    return [
        r
        for r in caplog.records
        if r.name.startswith("tokend") or (r.name.startswith("pygls") and r.levelno >= 30)
    ]


def test_a_refused_request_is_one_line_without_params_or_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, capture = _server()
    with caplog.at_level(logging.DEBUG, logger="tokend"):
        _receive(server, {"jsonrpc": "2.0", "id": 7, "method": "test/refuse", "params": SECRET})
    [reply] = capture.sent
    assert reply["id"] == 7 and reply["error"]["code"] == -32602
    [record] = _records(caplog)
    assert record.levelno == logging.INFO and record.exc_info is None
    assert record.getMessage() == (
        "test/refuse failed: code -32602, message.parts[0] must be an object with a 'type'"
    )
    assert SECRET not in caplog.text


def test_a_bug_keeps_its_traceback_in_the_log_not_in_the_reply(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, capture = _server()
    with caplog.at_level(logging.DEBUG, logger="tokend"):
        _receive(server, {"jsonrpc": "2.0", "id": 8, "method": "test/bug", "params": {}})
    [reply] = capture.sent
    assert reply["error"]["code"] == -32603
    # the client is told which method failed and how, never the traceback (the log has it)
    assert "data" not in reply["error"]
    assert "test/bug (KeyError)" in reply["error"]["message"]
    errors = [r for r in _records(caplog) if r.levelno >= logging.ERROR]
    assert errors and errors[0].exc_info is not None
    assert "KeyError: 'a bug'" in caplog.text


def test_lsp_params_that_do_not_fit_get_an_error_for_that_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, capture = _server(initialized=False)
    params = {"processId": SECRET, "capabilities": 5}
    with caplog.at_level(logging.DEBUG):
        _receive(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    [reply] = capture.sent
    assert reply["id"] == 1 and reply["error"]["code"] == -32602
    assert "params.capabilities" in reply["error"]["message"]
    assert "params.processId" in reply["error"]["message"]
    [record] = _records(caplog)
    assert record.levelno == logging.INFO and record.exc_info is None
    assert "request initialize refused: code -32602" in record.getMessage()
    assert SECRET not in caplog.text and SECRET not in json.dumps(reply)


def test_a_wrong_jsonrpc_version_is_refused_without_logging_the_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, capture = _server()
    message = {"jsonrpc": "1.0", "id": 3, "method": "test/refuse", "params": {"key": SECRET}}
    with caplog.at_level(logging.DEBUG):
        _receive(server, message)
    [reply] = capture.sent
    assert reply["id"] == 3 and reply["error"]["code"] == -32600
    assert SECRET not in caplog.text
    assert [r.levelno for r in _records(caplog)] == [logging.INFO]


def test_a_notification_with_unfit_params_is_dropped_with_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, capture = _server()
    with caplog.at_level(logging.DEBUG):
        _receive(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"x": SECRET}})
    assert capture.sent == []
    [record] = _records(caplog)
    assert "notification $/cancelRequest refused" in record.getMessage()
    assert SECRET not in caplog.text


class Frames:
    """A pygls writer that keeps the raw frames (headers and body) the server sends."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def close(self) -> None:
        pass


def test_a_result_written_as_json_text_is_a_well_framed_reply() -> None:
    """A JsonText result (workspace/fileTokens) goes out as it is: the Content-Length is the
    body's bytes and the body is the reply json parses, a non-ASCII path included."""
    from tokend.lsp import wire

    figures = [{"path": "docs/Grüße/读我.md", "bytes": 12, "tokens": 3, "basis": "estimate"}]
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )

    @server.feature("test/text")
    def text(ls: LanguageServer, params: Any) -> Any:
        return wire.json_array(figures)

    frames = Frames()
    server.protocol.set_writer(frames, include_headers=True)
    server.protocol.initialize_seen = True
    _receive(server, {"jsonrpc": "2.0", "id": "r-1", "method": "test/text", "params": {}})
    [frame] = frames.sent
    header, _, body = frame.partition(b"\r\n\r\n")
    length = int(header.split(b"\r\n")[0].removeprefix(b"Content-Length: "))
    assert length == len(body)
    assert json.loads(body) == {"id": "r-1", "jsonrpc": "2.0", "result": figures}
