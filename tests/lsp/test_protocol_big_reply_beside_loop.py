"""A big reply is encoded beside the event loop, and keeps its place among the connection's
messages (lsp/connection.py, lsp/encode.py, daemon/outbox.py's write_later).

Found (issue 17's fuzz): `context/assemble` with an 8 MB `system` returned it, and json.dumps
wrote the reply on the loop, holding the interpreter for the whole string: every connection of
the daemon waited. Judged by loop turns, not by a clock: a task that only yields counts the
loop's turns, and the count is noted when the reply's first bytes reach the socket's writer.
Encoded on the loop, nothing else can run meanwhile (a turn or two: the outbox's own drain);
beside it, the loop keeps turning while the reply is encoded. (A count taken by a reader on the
socket's other end also counted the reader thread's own wait for the interpreter: 4 turns with
the reply encoded on the loop, 12 beside it on a loaded CI machine.)
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tests.lsp_client import LspClient
from tokend.daemon.outbox import Outbox
from tokend.lsp.protocol import TokendProtocol, shared_converter

TEXT = ('😀 naïve "quoted" ' * 120_000)[:2_000_000]  # JSON writes it as ~14 MB


def _read(sock: socket.socket, count: int) -> list[Any]:
    """`count` messages from `sock`."""
    client = LspClient(sock.fileno(), sock.fileno(), sock)
    return [client.read_message(timeout=120) for _ in range(count)]


async def test_the_loop_turns_while_a_big_reply_is_encoded_and_order_is_kept() -> None:
    # The loop gets the interpreter back at each switch interval; a short one gives it many
    # turns beside the encoder whatever the machine's load (a CI run with the default 5 ms saw
    # 12), and none more when the encoding holds the loop itself.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        await _big_reply_beside_the_loop()
    finally:
        sys.setswitchinterval(interval)


async def _big_reply_beside_the_loop() -> None:
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_unix_connection(sock=ours)
    outbox = Outbox(writer)
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )
    server.protocol.set_writer(outbox)
    turns = [0]
    running = True

    async def count_turns() -> None:
        while running:
            turns[0] += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    first_byte: list[int] = []  # the turn count when the big reply's first bytes are written
    write = writer.write

    def noting_write(data: bytes | bytearray | memoryview) -> None:
        if len(data) > 10_000 and not first_byte:  # a slice of the big reply
            first_byte.append(turns[0])
        write(data)

    writer.write = noting_write  # type: ignore[method-assign]
    reader = asyncio.create_task(asyncio.to_thread(_read, theirs, 3))
    await asyncio.sleep(0.05)  # the reader waits on the socket
    sent_at = turns[0]
    server.protocol._send_response(7, result={"system": [TEXT], "totalTokens": 3})
    log = types.LogMessageParams(types.MessageType.Log, "after the big reply")
    server.protocol.notify(types.WINDOW_LOG_MESSAGE, log)
    server.protocol._send_response(8, result={"small": True})
    messages = await reader
    running = False
    await counter
    outbox.close()
    writer.close()
    theirs.close()

    assert [m.get("id", m.get("method")) for m in messages] == [7, "window/logMessage", 8]
    assert messages[0]["result"]["system"] == [TEXT]  # whole, as json.dumps would write it
    turned = first_byte[0] - sent_at
    print(f"the loop turned {turned} times before the reply's first byte")
    assert turned > 8  # on the loop: 1 (the outbox's drain), whatever the machine


def test_a_small_reply_is_written_at_once() -> None:
    """The usual reply costs no thread: it is in the writer when _send_response returns."""
    written: list[bytes] = []

    class Writer:
        def write(self, frame: bytes) -> None:
            written.append(frame)

        def write_later(self, pending: Any) -> None:
            raise AssertionError("a small reply went to a thread")

    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )
    server.protocol.set_writer(Writer())
    server.protocol._send_response(1, result={"sessionId": "s", "usedTokens": 12})
    [frame] = written
    assert json.loads(frame.partition(b"\r\n\r\n")[2])["result"]["usedTokens"] == 12
