"""Probes and abuse for the daemon tests: process lookup, RSS, malformed frames, a discarding reader."""

from __future__ import annotations

import socket
from pathlib import Path


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


def live_pids(*needles: str) -> set[int]:
    """Live (not zombie) processes whose command line contains every needle."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and all(needle in cmdline for needle in needles):
            pids.add(int(entry.name))
    return pids
