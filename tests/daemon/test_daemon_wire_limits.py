"""What a connection may cost the daemon, on real daemon processes and sockets.

Found: 6 unauthenticated TCP connections sending 60 MB bodies took the daemon from 87 MB to
1.1 GB; connections with broken framing stayed open by the thousand; an append over 64 MiB and a
reply over 32 MiB were answered by cutting the connection; a client sending requests without
reading its replies was buffered until it was cut.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tests.daemon.abuse import rss_kib
from tests.daemon.conftest import Runtime
from tests.lsp_client import LspClient, frame

UNAUTHORIZED, PARSE_ERROR = -33007, -32700
REQUEST_TOO_LARGE, REPLY_TOO_LARGE = -33011, -33012
MIB = 1 << 20


def _tcp_daemon(runtime: Runtime) -> tuple[int, int]:
    """(daemon pid, TCP port) of a fixture daemon with a unix socket and a TCP listener."""
    daemon, addresses, _ = runtime.start_daemon(f"unix:{runtime.socket_path()}", "tcp:127.0.0.1:0")
    return daemon.pid, int(next(a for a in addresses if a.startswith("tcp:")).rsplit(":", 1)[1])


def _open_connections(client: LspClient) -> int:
    return len(client.request("test/status")["result"]["connections"])


def _eventually(condition: object, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_unauthenticated_60_mb_bodies_leave_the_daemon_flat(runtime: Runtime) -> None:
    pid, port = _tcp_daemon(runtime)
    before_kib = rss_kib(pid)
    body = b"x" * (60 * MIB)

    def intrude() -> bool:
        intruder = socket.create_connection(("127.0.0.1", port))
        try:
            intruder.sendall(frame(body))
        except OSError:
            pass  # refused after the header: the daemon closed on us mid-body
        closed = LspClient(intruder.fileno(), intruder.fileno(), intruder).wait_closed()
        intruder.close()
        return closed

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(lambda _: intrude(), range(6)))
    growth_kib = rss_kib(pid) - before_kib
    assert growth_kib < 8 * 1024, f"the daemon grew {growth_kib} KiB from 6 x 60 MB unauthenticated"


def test_a_large_message_before_authentication_is_refused_and_closed(runtime: Runtime) -> None:
    _, port = _tcp_daemon(runtime)
    client = LspClient.tcp("127.0.0.1", port)
    client.send_raw(b"Content-Length: %d\r\n\r\n" % (1 * MIB))
    refused = client.read_message()
    assert refused["id"] is None and refused["error"]["code"] == UNAUTHORIZED
    assert "authToken" in refused["error"]["message"]
    assert client.wait_closed()


def test_a_tcp_client_that_does_not_authenticate_in_time_is_closed(runtime: Runtime) -> None:
    _, port = _tcp_daemon(runtime)
    silent = LspClient.tcp("127.0.0.1", port)
    slow = LspClient.tcp("127.0.0.1", port)
    slow.send_raw(b"Content-Length: 4")  # a header that never ends
    for client in (silent, slow):
        assert client.wait_closed(timeout=20), "an unauthenticated connection stayed open"


def test_connections_with_broken_framing_are_closed(runtime: Runtime) -> None:
    runtime.start_daemon()
    good = LspClient.unix(runtime.socket_path())
    good.initialize("good")
    broken = [
        b"\x00\xff garbage without any header\r\n",
        b"Content-Length: nope\r\n\r\n{}",
        b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"\r\n\r\n{}",
        b"X" * 70_000,  # a header line without an end
    ]
    clients = []
    for n in range(200):
        client = LspClient.unix(runtime.socket_path())
        client.send_raw(broken[n % len(broken)])
        clients.append(client)
    for n, client in enumerate(clients):
        if n % len(broken) != 4:  # a cut-off line is closed without a reply
            told = client.read_message()
            assert told["id"] is None and told["error"]["code"] == PARSE_ERROR, told
        assert client.wait_closed(), f"{broken[n % len(broken)][:30]!r} left the connection open"
    assert _eventually(lambda: _open_connections(good) == 1)


def test_a_message_over_the_frame_limit_gets_an_error_and_the_connection_stays(
    runtime: Runtime,
) -> None:
    runtime.start_daemon()
    client = LspClient.unix(runtime.socket_path())
    client.initialize("agent")
    head = b'{"jsonrpc": "2.0", "id": 41, "method": "test/echo", "params": {"output": "'
    tail = b'"}}'
    filler = 64 * MIB + 1 - len(head) - len(tail)
    client.send_raw(b"Content-Length: %d\r\n\r\n" % (64 * MIB + 1) + head)
    piece = b"y" * MIB
    for _ in range(filler // MIB):
        client.send_raw(piece)
    client.send_raw(b"y" * (filler % MIB) + tail)
    refused = client.read_message(timeout=60)
    assert refused["id"] == 41 and refused["error"]["code"] == REQUEST_TOO_LARGE
    assert refused["error"]["data"] == {"bytes": 64 * MIB + 1, "limit": 64 * MIB}
    assert client.request("test/echo", "still here")["result"]["echo"] == "still here"


def test_an_id_after_the_params_is_still_found(runtime: Runtime) -> None:
    runtime.start_daemon()
    client = LspClient.unix(runtime.socket_path())
    client.initialize("agent")
    params = json.dumps({"parts": [{"text": "z" * 1000, "id": 5}] * (70 * 1024)})
    data = b'{"params": ' + params.encode() + b', "method": "test/echo", "jsonrpc": "2.0", '
    data += b'"id": "late-id"}'  # the id last: found by reading the whole body through
    assert len(data) > 64 * MIB
    client.send_raw(frame(data))
    refused = client.read_message(timeout=120)
    assert refused["id"] == "late-id" and refused["error"]["code"] == REQUEST_TOO_LARGE


def test_a_reply_over_the_limit_gets_an_error_and_the_connection_stays(runtime: Runtime) -> None:
    runtime.start_daemon()
    client = LspClient.unix(runtime.socket_path())
    client.initialize("editor")
    big = client.request("test/big", {"bytes": 33 * MIB}, timeout=60)
    assert big["error"]["code"] == REPLY_TOO_LARGE and big["error"]["data"]["limit"] == 32 * MIB
    assert client.request("test/big", {"bytes": 1000})["result"]["blob"] == "x" * 1000


def test_a_client_that_does_not_read_its_replies_is_slowed_not_buffered_nor_cut(
    runtime: Runtime,
) -> None:
    """40,000 requests whose replies (2 KiB each, 80 MB in all) the client does not read:
    the daemon stops reading from it instead of queueing them, serves everyone else, and
    delivers every reply once the client reads."""
    daemon, _, _ = runtime.start_daemon()
    hog = LspClient.unix(runtime.socket_path())
    hog.initialize("hog")
    other = LspClient.unix(runtime.socket_path())
    other.initialize("other")
    before_kib = rss_kib(daemon.pid)
    count = 40_000
    frames = b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        for body in (
            json.dumps(
                {"jsonrpc": "2.0", "id": n, "method": "test/big", "params": {"bytes": 2048}}
            ).encode()
            for n in range(count)
        )
    )
    sender = threading.Thread(target=hog.send_raw, args=(frames,), daemon=True)
    sender.start()
    time.sleep(2)  # the hog's socket buffers fill; the daemon stops reading it
    assert sender.is_alive(), "the daemon read (and buffered) all 40,000 requests"
    for n in range(20):
        assert other.request("test/echo", n)["result"]["echo"] == n
    growth_kib = rss_kib(daemon.pid) - before_kib
    assert growth_kib < 32 * 1024, f"the daemon grew {growth_kib} KiB for an unread client"

    ids = [hog.read_message(timeout=30)["id"] for _ in range(count)]
    assert ids == list(range(count))  # every reply, in order, on a connection never cut
    sender.join(30)
