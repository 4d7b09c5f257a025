"""The outbox: a client that reads slowly costs bounded memory and never loses a reply."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

from tokend.daemon.conn import encode_frame
from tokend.daemon.outbox import Outbox

SOFT_LIMIT = 64 << 10


def _gauge(seq: int) -> bytes:
    return encode_frame(
        {"jsonrpc": "2.0", "method": "budget/didChange", "params": {"seq": seq, "pad": "x" * 200}}
    )


def _reply(msg_id: int) -> bytes:
    return encode_frame({"jsonrpc": "2.0", "id": msg_id, "result": {"method": "budget/didChange"}})


def _read_all(sock: socket.socket) -> list[dict[str, Any]]:
    data = b""
    while chunk := sock.recv(1 << 16):
        data += chunk
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


async def _outbox_on_socketpair(**options: Any) -> tuple[Outbox, socket.socket]:
    ours, theirs = socket.socketpair()
    for sock in (ours, theirs):  # small kernel buffers: the client falls behind at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    _, writer = await asyncio.open_unix_connection(sock=ours)
    return Outbox(writer, transport_high_water_bytes=4096, **options), theirs


async def test_a_slow_reader_loses_old_gauge_updates_but_no_reply() -> None:
    outbox, client = await _outbox_on_socketpair(soft_limit_bytes=SOFT_LIMIT)
    largest_queue = 0
    for seq in range(20_000):
        outbox.write(_gauge(seq))
        if seq % 100 == 0:
            outbox.write(_reply(seq))
        largest_queue = max(largest_queue, outbox.queued_bytes)
        if seq % 1000 == 0:
            await asyncio.sleep(0)  # the drain task runs, and stalls on the full socket

    assert largest_queue <= SOFT_LIMIT  # flat: 20k updates (~5 MB) never queue more than the limit
    assert outbox.dropped_frames > 0
    outbox.close()
    messages = await asyncio.to_thread(_read_all, client)

    replies = [m["id"] for m in messages if "id" in m]
    assert replies == list(range(0, 20_000, 100))  # every reply, in order
    seqs = [m["params"]["seq"] for m in messages if "id" not in m]
    assert seqs == sorted(seqs) and seqs[-1] == 19_999  # the newest gauge survives, order kept
    assert len(seqs) + outbox.dropped_frames == 20_000


async def test_a_client_that_never_reads_is_disconnected_not_buffered_forever() -> None:
    outbox, client = await _outbox_on_socketpair(
        soft_limit_bytes=SOFT_LIMIT, hard_limit_bytes=1 << 20
    )
    for msg_id in range(20_000):  # ~1.4 MB of undroppable replies
        outbox.write(_reply(msg_id))
        if outbox.closing:
            break
    assert outbox.closing
    assert outbox.queued_bytes == 0
    await outbox.wait_closed()
    assert await asyncio.to_thread(_read_all, client) is not None  # EOF reached: disconnected


async def test_frames_written_from_worker_threads_arrive_whole_and_in_order() -> None:
    outbox, client = await _outbox_on_socketpair()
    thread = threading.Thread(target=lambda: [outbox.write(_reply(i)) for i in range(500)])
    thread.start()
    await asyncio.to_thread(thread.join)
    await asyncio.sleep(0.05)
    outbox.close()
    messages = await asyncio.to_thread(_read_all, client)
    assert [m["id"] for m in messages] == list(range(500))


async def test_a_reply_that_quotes_a_droppable_method_is_not_parsed_to_be_kept(
    monkeypatch: Any,
) -> None:
    """Found (issue 22): every reply frame was searched for the droppable methods' names and,
    when it held one (a context/assemble whose tool calls send `{"method":
    "budget/didChange"}`, megabytes), parsed whole on the event loop only to find its "id".
    A body that starts with its "id" (as lsp/connection.py writes replies) is a reply: kept,
    not parsed (main: one json.loads of it)."""
    from tokend.daemon import outbox as outbox_module

    parsed: list[int] = []
    real = outbox_module.json.loads

    def loads(body: Any, *args: Any, **kwargs: Any) -> Any:
        parsed.append(len(body))
        return real(body, *args, **kwargs)

    monkeypatch.setattr(outbox_module.json, "loads", loads)
    outbox, client = await _outbox_on_socketpair(soft_limit_bytes=SOFT_LIMIT)
    tool_use = {"type": "tool_use", "input": {"method": "budget/didChange"}}  # as sent
    body = json.dumps({"id": 7, "jsonrpc": "2.0", "result": {"messages": [tool_use]}}).encode()
    frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    assert b'"method": "budget/didChange"' in frame
    outbox.write(frame)
    outbox.write(_gauge(1))  # a notification is still looked at (and parsed)
    outbox.close()
    await outbox.wait_closed()
    by_outbox = list(parsed)
    got = await asyncio.to_thread(_read_all, client)
    client.close()
    assert by_outbox == [len(_gauge(1).partition(b"\r\n\r\n")[2])]  # main: the reply's too
    assert [m.get("id") for m in got] == [7, None]
