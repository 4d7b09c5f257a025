"""A refused request keeps nothing of its params once it is answered.

Found (issue 17's fuzz, heap of the daemon after it): 202 refusals still held 553 MiB of
strings. Each exception's traceback kept its frames, whose locals hold the params (an 8 MB
string), and they sat in reference cycles (cattrs collects sub-exceptions in a list of the
failing frame; pygls keeps the error in a future its frame holds) that only the collector's
rare full passes free (the daemon collects in large batches: daemon/process.py). Here the
collector is off, as it is between those passes: after the reply, nothing but the test itself
refers to the params.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pygls.lsp.server import LanguageServer

from tests.lsp.test_protocol import Capture
from tokend.lsp.protocol import TokendProtocol, shared_converter
from tokend.lsp.server import rpc
from tokend.lsp.wire import from_wire
from tokend.lsp.wire.session import SessionCreateParams

BIG = "the quick brown fox " * 50_000


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _server(initialized: bool) -> tuple[LanguageServer, Capture]:
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )

    @server.feature("test/create")
    @rpc
    def create(ls: LanguageServer, params: Any) -> Any:
        return {"model": from_wire(SessionCreateParams, params).model}

    capture = Capture()
    server.protocol.set_writer(capture, include_headers=False)
    server.protocol.initialize_seen = initialized
    return server, capture


def _held_after_reply(message: dict[str, Any]) -> list[str]:
    """Send `message` through the server's own parsing; what still refers to its params
    (gc-tracked containers, frames), besides the parsed message itself, once answered."""
    server, capture = _server(initialized=message["method"] != "initialize")
    protocol = server.protocol
    parsed: list[dict[str, Any]] = []

    def hook(data: dict[str, Any]) -> Any:
        if "jsonrpc" in data:
            parsed.append(data)
        return protocol.structure_message(data)

    protocol.handle_message(json.loads(json.dumps(message), object_hook=hook))
    [reply] = capture.sent
    assert reply["error"]["code"] == -32602, reply
    params = parsed[0]["params"]
    held = [r for r in gc.get_referrers(params) if r is not parsed[0]]
    return [
        type(r).__name__ + (f" {r.f_code.co_name}" if hasattr(r, "f_code") else "") for r in held
    ]


@pytest.mark.usefixtures("no_collector")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", {"processId": None, "capabilities": {}, "rootUri": ["a", BIG]}),
        ("test/create", BIG),
        ("test/create", {"model": "gpt-4o", "title": ["t", BIG]}),
        ("test/create", {"model": ["m", BIG]}),
    ],
    ids=["lsp params (cattrs)", "params a string", "a wire field", "a wire field (model)"],
)
def test_a_refusal_holds_no_frame_with_its_params(method: str, params: Any) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    assert _held_after_reply(message) == []
