"""Abuse for the daemon tests: malformed frames, a reader that discards, the RSS probe."""

from __future__ import annotations

import socket


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def discard_until_closed(sock: socket.socket) -> None:
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def malformed_frames() -> list[bytes]:
    """Garbage lines, bodies that are not JSON / not JSON-RPC, and frames cut short."""
    frame = b"Content-Length: %d\r\n\r\n%s"
    return [
        b"\x00\xff garbage without any header\r\n",
        frame % (9, b"{not json"),
        frame % (7, b"[1,2,3]"),
        frame % (12, b'{"hello": 1}'),
        frame % (2, b"\xc3\x28"),  # invalid UTF-8
        b"Content-Length: 60\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 1, "method": "test/echo", "par',
        b"Content-Length: nope\r\n\r\n{}",
    ]
