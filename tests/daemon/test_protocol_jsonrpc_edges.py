"""JSON-RPC's edges on the real `tokend serve`: what a client's mistakes get back.

Found: a notification with bad params got an error reply (JSON-RPC forbids it), a request after
`shutdown` was dropped (LSP wants InvalidRequest), `"jsonrpc": "1.0"` was dropped silently, a
malformed `initialize` got id null; a tool-call input nested 800-940 levels deep was accepted and
broke every later Anthropic assembly of its session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient, frame
from tokend.daemon import paths

INVALID_REQUEST, INVALID_PARAMS, UNAUTHORIZED = -32600, -32602, -33007


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _client(daemons: Daemons) -> LspClient:
    daemons.serve()
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("careless")
    return client


def _before_the_next_reply(client: LspClient) -> list[dict[str, Any]]:
    """Everything the daemon sends before its reply to a fresh request."""
    client.send({"jsonrpc": "2.0", "id": "sync", "method": "daemon/status"})
    seen = []
    while (message := client.read_message()).get("id") != "sync":
        seen.append(message)
    return seen


def _call(client: LspClient, message: dict[str, Any]) -> dict[str, Any]:
    """The reply to `message` (sent as is); notifications before it are kept aside."""
    client.send(message)
    while "id" not in (reply := client.read_message()):
        client.notifications.append(reply)
    return reply


def test_a_notification_with_bad_params_gets_no_reply_and_no_popup(daemons: Daemons) -> None:
    client = _client(daemons)
    for method, params in [
        ("session/append", 3),
        ("budget/snapshot", {"sessionId": 7}),
        ("initialized", "x"),
        ("$/cancelRequest", "x"),
        ("workspace/didChangeConfiguration", 3),
        ("no/such/notification", None),
    ]:
        client.notify(method, params)
    assert _before_the_next_reply(client) == []


def test_a_request_after_shutdown_gets_invalid_request(daemons: Daemons) -> None:
    client = _client(daemons)
    assert client.request("shutdown")["result"] is None
    refused = _call(client, {"jsonrpc": "2.0", "id": 5, "method": "daemon/status"})
    assert refused["id"] == 5 and refused["error"]["code"] == INVALID_REQUEST
    client.notify("exit")
    assert client.wait_closed()


def test_a_wrong_or_missing_jsonrpc_version_gets_invalid_request(daemons: Daemons) -> None:
    client = _client(daemons)
    old = _call(client, {"jsonrpc": "1.0", "id": 3, "method": "daemon/status"})
    assert old["id"] == 3 and old["error"]["code"] == INVALID_REQUEST
    assert '"2.0"' in old["error"]["message"]
    bare = _call(client, {"id": 4, "method": "daemon/status"})
    assert bare["id"] == 4 and bare["error"]["code"] == INVALID_REQUEST
    odd_id = _call(client, {"jsonrpc": "2.0", "id": {"n": 1}, "method": "daemon/status"})
    assert odd_id["id"] is None and odd_id["error"]["code"] == INVALID_REQUEST
    assert "result" in client.request("daemon/status")  # the connection lives on


def test_a_malformed_initialize_is_answered_to_its_own_id(daemons: Daemons) -> None:
    daemons.serve("--listen", f"unix:{paths.socket_path()}", "--listen", "tcp:127.0.0.1:0")
    for msg_id, params in [(11, "x"), (12, {"capabilities": 3}), (13, None)]:
        client = LspClient.unix(paths.socket_path())
        message = {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
        refused = _call(client, message)
        assert refused["id"] == msg_id and refused["error"]["code"] == INVALID_PARAMS, refused
        assert "result" in client.initialize("second try")
    port = int(re.search(r"tcp:127\.0\.0\.1:(\d+)", daemons.log_text()).group(1))
    remote = LspClient.tcp("127.0.0.1", port)
    refused = _call(remote, {"jsonrpc": "2.0", "id": 21, "method": "initialize", "params": "x"})
    assert refused["id"] == 21 and refused["error"]["code"] == UNAUTHORIZED
    assert remote.wait_closed()


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for level in range(levels):
        value = {"a": value} if level % 2 else [value]
    return value


def test_deeply_nested_params_are_refused_before_they_reach_the_session(daemons: Daemons) -> None:
    client = _client(daemons)
    sid = client.request("session/create", {"model": "claude-sonnet-4-5"})["result"]["sessionId"]

    def call_with_input(tool_input: Any) -> dict[str, Any]:
        part = {"type": "toolCall", "callId": "c1", "name": "bash", "input": tool_input}
        message = {"role": "assistant", "parts": [part]}
        return client.request("session/append", {"sessionId": sid, "message": message})

    refused = call_with_input(_nested(900))
    assert refused["error"]["code"] == INVALID_PARAMS and "nested" in refused["error"]["message"]
    # Deeper than JSON parsers (this test's encoder included) can go: written by hand.
    deep = b"[" * 5000 + b"]" * 5000
    body = b'{"jsonrpc": "2.0", "id": 99, "method": "session/append", "params": {"sessionId": '
    body += b'"%s", "message": {"role": "assistant", "parts": [{"type": "toolCall", ' % sid.encode()
    body += b'"callId": "c1", "name": "bash", "input": %s}]}}}' % deep
    client.send_raw(frame(body))
    while "id" not in (refused := client.read_message()):
        pass
    assert refused["id"] == 99 and refused["error"]["code"] == INVALID_PARAMS, refused
    accepted = call_with_input(_nested(50))  # deep, but a real tool's input can be
    assert accepted["result"]["version"] == 1  # the refused ones changed nothing
    assembled = client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    assert "result" in assembled, assembled


REQUEST_TOO_LARGE, REPLY_TOO_LARGE = -33011, -33012


def test_limits_are_answered_with_errors_and_the_editor_keeps_its_server(
    daemons: Daemons,
) -> None:
    """An append over 64 MiB and an assembled context over 32 MiB (a 10M-window session) were
    answered by cutting the connection: now each gets its error, and the connection stays."""
    client = _client(daemons)
    # An o200k model: a Claude session's big appends are answered with their estimate and their
    # exact counts land later as changes of their own (versions), which this test is not about.
    create = {"model": "gpt-4.1", "contextWindow": 20_000_000}
    sid = client.request("session/create", create)["result"]["sessionId"]

    def append(text: str) -> dict[str, Any]:
        message = {"role": "user", "parts": [{"type": "text", "text": text}]}
        return client.request("session/append", {"sessionId": sid, "message": message}, timeout=120)

    too_big = append("y" * (65 << 20))
    assert too_big["error"]["code"] == REQUEST_TOO_LARGE, too_big["error"]
    assert too_big["error"]["data"]["limit"] == 64 << 20
    words = "the build fails because the parser returns none on an empty file " * 190_000
    for _ in range(3):  # ~36 MB in all, each append under the frame limit
        assert "result" in append(words)
    assembled = client.request(
        "context/assemble", {"sessionId": sid, "format": "anthropic"}, timeout=120
    )
    assert assembled["error"]["code"] == REPLY_TOO_LARGE, str(assembled)[:300]
    assert assembled["error"]["data"]["limit"] == 32 << 20
    snapshot = client.request("budget/snapshot", {"sessionId": sid})["result"]
    assert snapshot["version"] == 3  # the refused append stored nothing
