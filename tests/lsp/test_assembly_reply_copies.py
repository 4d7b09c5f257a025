"""A warm `context/assemble` reply goes out with one copy of its messages' text, the frame's:
main 1db3331 joined the result's text, copied it into a JsonText, encoded it and framed it, four
copies of 2.6 MB at 10,000 messages, each a fresh mapping of pages in the daemon (its blocks of
1 MiB and more are mmapped). Now the render cache keeps the joined messages' bytes while they
are the same (RenderCache.join_json_bytes) and the reply's pieces are joined once, into the
frame (lsp.wire.JsonBytes).

Counted with tracemalloc: the most memory allocated at once while a warm reply is written and
framed, against the size of its messages' text. Oracle for the reply: json.dumps of the result
with the messages a plain reference writes for a session of text turns."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from typing import Any

from pygls.lsp.server import LanguageServer

from tests.lsp.test_protocol import Frames
from tokend.core.assembly.assemble import AssemblyRequest, assemble
from tokend.core.assembly.render_cache import RenderCache
from tokend.core.types import Message, StoredPart, TextPart
from tokend.lsp.assemble_reply import assemble_text
from tokend.lsp.protocol import TokendProtocol, shared_converter

AT = datetime(2026, 1, 1, tzinfo=UTC)
TURNS = 2_000


def _history() -> tuple[Message, ...]:
    return tuple(
        Message(
            f"m{i}",
            "s1",
            "user" if i % 2 == 0 else "assistant",
            (StoredPart(f"p{i}", TextPart(f"turn {i}: " + "word " * 40), 45),),
            AT,
        )
        for i in range(TURNS)
    )


def _request(history: tuple[Message, ...], cache: RenderCache) -> AssemblyRequest:
    tokens = {m.id: 48 for m in history}
    return AssemblyRequest(
        format="openai",
        limit_tokens=10**9,
        history=history,
        system="You are careful.",
        system_tokens=7,
        message_overhead=lambda _m: 3,
        render_cache=cache,
        message_tokens=tokens,
        history_tokens=sum(tokens.values()),
        pruned_result_tokens=5,
    )


def test_a_warm_reply_is_copied_once_on_its_way_out() -> None:
    history, cache = _history(), RenderCache()
    assemble_text(assemble(_request(history, cache)), cache)  # the first: the cache filled
    assembly = assemble(_request(history, cache))  # warm: the same messages
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )

    @server.feature("test/assemble")
    def reply(ls: LanguageServer, params: Any) -> Any:
        return assemble_text(assembly, cache)

    frames = Frames()
    server.protocol.set_writer(frames, include_headers=True)
    server.protocol.initialize_seen = True
    request = {"jsonrpc": "2.0", "id": 7, "method": "test/assemble", "params": {}}
    parsed = json.loads(json.dumps(request), object_hook=server.protocol.structure_message)
    tracemalloc.start()
    try:
        server.protocol.handle_message(parsed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [frame] = frames.sent
    header, _, body = frame.partition(b"\r\n\r\n")
    assert int(header.split(b"\r\n")[0].removeprefix(b"Content-Length: ")) == len(body)
    expected = [{"role": "system", "content": "You are careful."}] + [
        {"role": m.role, "content": m.parts[0].part.text}  # type: ignore[union-attr]
        for m in history
    ]
    got = json.loads(body)
    assert got["id"] == 7 and got["result"]["messages"] == expected
    messages_bytes = len(json.dumps(expected))
    # main: 3 times the messages' text at once (the JsonText, its encoding, the frame); now 1
    assert peak < 1.5 * messages_bytes, (peak, messages_bytes)
