"""`context/assemble`'s reply is joined from each message's JSON text kept in the session's
render cache (lsp/assemble_reply.py), and a restarted daemon reads a session's bodies with the
counts the store keeps (service/session/loading.py). Neither may change a byte of what a client gets.

The real `tokend serve` of this tree on a private socket and SQLite file (bench/scale_session's
daemon), its replies read as the raw bytes of their frames. Oracles: the stdlib's own writing of
what the client received (`json.dumps(json.loads(body))`: ASCII escapes, ", " and ": ", keys in
order), the first reply against the warm ones (the cache empty, then full), and the reply before
a restart against the one after it (counts, chunks, messages)."""

from __future__ import annotations

import json
import os
import select
from typing import Any

from bench.append_order import ROOT, Daemon
from bench.scale_session import MODEL, WINDOW, _restart, pipelined, short_turns, tool_exchange


def _raw(client: Any, method: str, params: dict[str, Any]) -> bytes:
    """The reply to one request as its frame carried it, from its `"result"` on (the id
    before it differs from one request to the next)."""
    request_id = client.start_request(method, params)
    buffer = bytearray(client.buffer)
    client.buffer = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            length = int(bytes(buffer[:end]).lower().split(b"content-length:")[1].split(b"\r")[0])
            if len(buffer) >= end + 4 + length:
                body = bytes(buffer[end + 4 : end + 4 + length])
                del buffer[: end + 4 + length]
                if json.loads(body).get("id") == request_id:
                    client.buffer = bytes(buffer)
                    assert json.dumps(json.loads(body)).encode() == body
                    return body[body.index(b'"result": ') :]
                continue
        assert select.select([client.read_fd], [], [], 60)[0], "no reply in 60 s"
        chunk = os.read(client.read_fd, 1 << 20)
        assert chunk, "the daemon closed the connection"
        buffer += chunk


def _unicode_turns() -> list[dict[str, Any]]:
    text = 'naïve café ✓ 😀 "quoted" back\\slash\ttab\nline \u2028 end'
    call = {"type": "toolCall", "callId": "u1", "name": "Édit", "input": {"päth": "ü.py", "n": 1.5}}
    return [
        {"role": "user", "parts": [{"type": "text", "text": text}]},
        {"role": "assistant", "parts": [{"type": "text", "text": text}, call]},
        {
            "role": "tool",
            "parts": [{"type": "toolResult", "callId": "u1", "name": "Édit", "output": text * 3}],
        },
        {"role": "user", "parts": [{"type": "text", "text": "and now " + text}]},
    ]


def _same_bytes_warm(client: Any, params: dict[str, Any]) -> bytes:
    first = _raw(client, "context/assemble", params)  # the render cache empty for this format
    assert first.startswith(b'"result": {"messages": ['), first[:300]
    for _ in range(2):
        assert _raw(client, "context/assemble", params) == first  # joined from cached text
    return first


def test_assemble_replies_are_the_same_bytes_warm_cold_and_after_a_restart():
    daemon = Daemon(ROOT)
    try:
        client = daemon.client("before")
        sid = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        sid = sid["sessionId"]
        messages = tool_exchange(0, 40) + _unicode_turns() + short_turns(41)
        assert pipelined(client, sid, messages)[1] == 0
        openai = {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."}
        anthropic = {**openai, "format": "anthropic", "budgetInjection": "synthetic"}
        before = _same_bytes_warm(client, openai)
        marked = _same_bytes_warm(client, anthropic)
        assert b'"cache_control": {"type": "ephemeral"}' in marked  # copied blocks written afresh
        assert json.dumps("naïve café ✓ 😀").encode()[1:-1] in before  # as ASCII escapes
        client.close()
        _restart(daemon)
        client = daemon.client("after")
        assert _same_bytes_warm(client, openai) == before  # bodies read cold: the same counts
        client.close()
    finally:
        daemon.stop()
